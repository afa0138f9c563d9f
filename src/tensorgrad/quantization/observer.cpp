// quantization/observer.cpp: MinMaxObserver, MovingAverageMinMaxObserver, HistogramObserver,
// FakeQuantize and fake_quantize_per_tensor_affine (forward through prim::, the straight-through backward right below).
// The arithmetic: Note [Observers] and Note [Histogram observer] in quantization/observer.h.
#include "tensorgrad/quantization/observer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <tuple>

#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {

Tensor fake_quantize_per_tensor_affine(const Tensor& x, double scale, int64_t zero_point, int64_t quant_min,
                                         int64_t quant_max) {
  const char* op = "fake_quantize_per_tensor_affine";
  TG_CHECK(x.defined(), Error, op, ": x must be defined");
  prim::check_floating(op, x.data());
  TG_CHECK(std::isfinite(scale) && scale > 0, Error, op, ": scale must be positive and finite, got ", scale);
  TG_CHECK(quant_min <= quant_max, Error, op, ": quant_min (", quant_min, ") must not be greater than quant_max (",
           quant_max, ")");
  TG_CHECK(zero_point >= quant_min && zero_point <= quant_max, Error, op, ": zero_point ", zero_point,
           " is outside [", quant_min, ", ", quant_max, "]");
  const RawTensor xf = x.data().to(kFloat32);
  const double inv = static_cast<double>(1.0f / static_cast<float>(scale));   // PyTorch's float inverse
  const RawTensor q = prim::add(prim::unary(UnaryOp::Round, prim::mul(xf, inv)), prim::scalar_like(double(zero_point), xf));
  const RawTensor lo = prim::scalar_like(double(quant_min), q), hi = prim::scalar_like(double(quant_max), q);
  const RawTensor y = prim::mul(prim::sub(prim::unary(UnaryOp::Clamp, q, {double(quant_min), double(quant_max)}),
                                       prim::scalar_like(double(zero_point), q)),
                             static_cast<double>(static_cast<float>(scale)))
                       .to(x.dtype());
  if (!any_requires_grad({x})) return Tensor(y);
  // the straight-through mask: 1 where q was not clamped
  const RawTensor inside = prim::mul(prim::binary(BinaryOp::Ge, q, lo, op), prim::binary(BinaryOp::Le, q, hi, op));
  SavedTensor mask(inside, op);
  return record(op, y, {x}, [mask](const auto& grad, auto& g) {
    g.set(0, rules::where(mask.get(), grad, rules::scalar(0.0, grad)));   // dx = dy where not clamped, else 0
  });
}

namespace quantization {

namespace {

float host_value(const Tensor& v) { return static_cast<float>(v.item()); }

void set_value(Tensor& v, double value) { prim::fill_(v.data(), value); }

/// Scale and zero point for the range [lo, hi] (PyTorch's _calculate_qparams, per tensor), in float32.
QParams range_qparams(float lo, float hi, float eps, bool symmetric, DType dtype, int64_t quant_min,
                      int64_t quant_max) {
  const float min_neg = std::min(lo, 0.0f), max_pos = std::max(hi, 0.0f);
  QParams p;
  if (symmetric) {
    const float m = std::max(-min_neg, max_pos);
    const float scale = std::max(m / static_cast<float>(double(quant_max - quant_min) / 2), eps);
    p.scale = scale;
    p.zero_point = dtype == kUInt8 ? 128 : 0;
  } else {
    const float scale = std::max((max_pos - min_neg) / static_cast<float>(quant_max - quant_min), eps);
    const int64_t zp = quant_min - static_cast<int64_t>(std::nearbyint(min_neg / scale));   // torch.round: half to even
    p.scale = scale;
    p.zero_point = std::min(std::max(zp, quant_min), quant_max);
  }
  return p;
}

/// The quantized range of dtype (uint8: [0, 255], int8: [-128, 127]), halved by reduce_range.
std::pair<int64_t, int64_t> quant_range(DType dtype, bool reduce_range) {
  int64_t lo = dtype == kInt8 ? -128 : 0, hi = dtype == kInt8 ? 127 : 255;
  if (reduce_range) lo /= 2, hi = dtype == kInt8 ? 63 : 127;   // PyTorch: -64..63, 0..127
  return {lo, hi};
}

}  // namespace

MinMaxObserver::MinMaxObserver(DType dtype, bool symmetric, bool reduce_range)
    : dtype_(dtype), symmetric_(symmetric), reduce_range_(reduce_range) {
  TG_CHECK(dtype == kUInt8 || dtype == kInt8, DTypeError,
           "MinMaxObserver: expected dtype uint8 (quint8) or int8 (qint8), got ", dtype_name(dtype));
  std::tie(quant_min_, quant_max_) = quant_range(dtype, reduce_range);
  eps_ = Tensor(prim::full({1}, std::numeric_limits<float>::epsilon(), kFloat32));
  min_val_ = Tensor(prim::full({}, std::numeric_limits<double>::infinity(), kFloat32));
  max_val_ = Tensor(prim::full({}, -std::numeric_limits<double>::infinity(), kFloat32));
  register_buffer("eps", eps_);
  register_buffer("min_val", min_val_);
  register_buffer("max_val", max_val_);
}

Tensor MinMaxObserver::forward(const Tensor& x) {
  TG_CHECK(x.defined(), Error, name(), ": x must be defined");
  prim::check_floating("MinMaxObserver", x.data());
  if (x.numel() == 0) return x;   // PyTorch: an empty batch changes nothing
  const RawTensor xf = x.data().to(kFloat32);
  const float lo = host_value(Tensor(prim::reduce(ReduceOp::Min, xf, {}, false, "MinMaxObserver")));
  const float hi = host_value(Tensor(prim::reduce(ReduceOp::Max, xf, {}, false, "MinMaxObserver")));
  update(lo, hi);
  return x;
}

void MinMaxObserver::update(float batch_min, float batch_max) {
  set_value(min_val_, std::min(host_value(min_val_), batch_min));
  set_value(max_val_, std::max(host_value(max_val_), batch_max));
}

double MinMaxObserver::min_val() const { return min_val_.item(); }
double MinMaxObserver::max_val() const { return max_val_.item(); }

QParams MinMaxObserver::calculate_qparams() const {
  const float lo = host_value(min_val_), hi = host_value(max_val_);
  if (lo == std::numeric_limits<float>::infinity() && hi == -std::numeric_limits<float>::infinity()) return {};
  return range_qparams(lo, hi, host_value(Tensor(eps_.data().reshape({}))), symmetric_, dtype_, quant_min_,
                       quant_max_);
}

std::string MinMaxObserver::name() const {
  std::ostringstream os;
  os << "MinMaxObserver(min_val=" << min_val() << ", max_val=" << max_val() << ")";
  return os.str();
}

std::unique_ptr<nn::Module> MinMaxObserver::new_instance() const {
  return std::make_unique<MinMaxObserver>(dtype_, symmetric_, reduce_range_);
}

MovingAverageMinMaxObserver::MovingAverageMinMaxObserver(double averaging_constant, DType dtype, bool symmetric,
                                                         bool reduce_range)
    : MinMaxObserver(dtype, symmetric, reduce_range), averaging_constant_(averaging_constant) {
  TG_CHECK(averaging_constant > 0 && averaging_constant <= 1, Error,
           "MovingAverageMinMaxObserver: averaging_constant must be in (0, 1], got ", averaging_constant);
}

void MovingAverageMinMaxObserver::update(float batch_min, float batch_max) {
  const float lo = host_value(min_val_), hi = host_value(max_val_);
  const float c = static_cast<float>(averaging_constant_);
  if (lo == std::numeric_limits<float>::infinity() && hi == -std::numeric_limits<float>::infinity()) {
    set_value(min_val_, batch_min);   // the first batch
    set_value(max_val_, batch_max);
    return;
  }
  set_value(min_val_, lo + c * (batch_min - lo));
  set_value(max_val_, hi + c * (batch_max - hi));
}

std::string MovingAverageMinMaxObserver::name() const {
  std::ostringstream os;
  os << "MovingAverageMinMaxObserver(min_val=" << min_val() << ", max_val=" << max_val() << ")";
  return os.str();
}

std::unique_ptr<nn::Module> MovingAverageMinMaxObserver::new_instance() const {
  return std::make_unique<MovingAverageMinMaxObserver>(averaging_constant_, dtype_, symmetric_, reduce_range_);
}

namespace {

/// torch.histc(x, bins, min=lo, max=hi) on float32 values as PyTorch 1.13's CPU kernel computes it
/// (Note [Histogram observer]): equal ends take the data's range, then widen by 1 each way if still
/// equal; values outside [lo, hi] are skipped; the bin index is computed in float32.
std::vector<float> histc(const std::vector<float>& x, int64_t bins, double lo, double hi) {
  if (lo == hi && !x.empty()) {
    const auto mm = std::minmax_element(x.begin(), x.end());
    lo = *mm.first, hi = *mm.second;
  }
  if (lo == hi) lo -= 1, hi += 1;
  const float left = static_cast<float>(lo), right = static_cast<float>(hi);   // the float32 bin edges' ends
  std::vector<float> h(static_cast<std::size_t>(bins), 0.0f);
  for (const float v : x) {
    if (!(v >= left && v <= right)) continue;
    auto pos = static_cast<int64_t>((v - left) * static_cast<float>(bins) / (right - left));
    if (pos == bins) pos -= 1;   // the last bin includes its right edge
    h[static_cast<std::size_t>(pos)] += 1.0f;
  }
  return h;
}

/// torch.div(a, b, rounding_mode="floor") for float32 (c10::div_floor_floating).
float div_floor(float a, float b) {
  if (b == 0) return a / b;
  const float mod = std::fmod(a, b);
  float div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1.0f;
  if (div == 0) return std::copysign(0.0f, a / b);
  float floordiv = std::floor(div);
  if (div - floordiv > 0.5f) floordiv += 1.0f;
  return floordiv;
}

constexpr int64_t kUpsampleRate = 128;  // PyTorch 1.13's default upsample_rate
constexpr int64_t kDstBins = 256;       // PyTorch's dst_nbins: 2 ** bits of the 8-bit dtype

}  // namespace

HistogramObserver::HistogramObserver(int64_t bins, DType dtype, bool symmetric, bool reduce_range)
    : bins_(bins), dtype_(dtype), symmetric_(symmetric), reduce_range_(reduce_range) {
  TG_CHECK(dtype == kUInt8 || dtype == kInt8, DTypeError,
           "HistogramObserver: expected dtype uint8 (quint8) or int8 (qint8), got ", dtype_name(dtype));
  TG_CHECK(bins >= 1, Error, "HistogramObserver: bins must be positive, got ", bins);
  std::tie(quant_min_, quant_max_) = quant_range(dtype, reduce_range);
  eps_ = Tensor(prim::full({1}, std::numeric_limits<float>::epsilon(), kFloat32));
  histogram_ = Tensor(prim::full({bins}, 0, kFloat32));
  min_val_ = Tensor(prim::full({}, std::numeric_limits<double>::infinity(), kFloat32));
  max_val_ = Tensor(prim::full({}, -std::numeric_limits<double>::infinity(), kFloat32));
  register_buffer("eps", eps_);
  register_buffer("histogram", histogram_);
  register_buffer("min_val", min_val_);
  register_buffer("max_val", max_val_);
}

Tensor HistogramObserver::forward(const Tensor& x) {
  TG_CHECK(x.defined(), Error, "HistogramObserver: x must be defined");
  prim::check_floating("HistogramObserver", x.data());
  if (x.numel() == 0) return x;   // PyTorch: an empty batch changes nothing
  const std::vector<float> xs = Tensor(x.data().to(kFloat32)).to_vector<float>();
  for (const float v : xs) TG_CHECK(std::isfinite(v), Error, "HistogramObserver: expected finite values, got ", v);
  const auto mm = std::minmax_element(xs.begin(), xs.end());
  const float x_min = *mm.first, x_max = *mm.second;
  const float cur_min = host_value(min_val_), cur_max = host_value(max_val_);
  const bool uninitialized =
      cur_min == std::numeric_limits<float>::infinity() && cur_max == -std::numeric_limits<float>::infinity();
  std::vector<float> hist;
  float new_min = x_min, new_max = x_max;
  if (uninitialized || cur_min == cur_max) {
    // the first batch, or a single value seen so far: the histogram starts over on this batch's range,
    // truncated to integers as PyTorch 1.13's int(min_val), int(max_val)
    hist = histc(xs, bins_, std::trunc(double(x_min)), std::trunc(double(x_max)));
  } else {
    // PyTorch's _adjust_min_max, in float32: the max moves out so that each new bin spans a whole
    // number (downsample_rate) of 1/128-th old bins
    float combined_min = std::min(x_min, cur_min), combined_max = std::max(x_max, cur_max);
    const float hist_bin_width = (cur_max - cur_min) / static_cast<float>(bins_ * kUpsampleRate);
    const float old_width = static_cast<float>(bins_) * hist_bin_width;
    const auto downsample_rate = static_cast<int64_t>(std::ceil((combined_max - combined_min) / old_width));
    const float e = static_cast<float>(downsample_rate) * old_width - (combined_max - combined_min);
    combined_max = combined_max + e;
    const auto start_idx = static_cast<int64_t>(std::nearbyint((cur_min - combined_min) / hist_bin_width));
    hist = histc(xs, bins_, std::trunc(double(combined_min)), std::trunc(double(combined_max)));
    const std::vector<float> old = histogram_.to_vector<float>();
    if (combined_min == cur_min && combined_max == cur_max) {
      for (int64_t i = 0; i < bins_; ++i) hist[std::size_t(i)] += old[std::size_t(i)];
    } else {
      // PyTorch's _combine_histograms: the old histogram upsampled 128 times (each bin's count
      // repeated) sits at [start_idx, start_idx + 128 bins) of a zero array of bins * downsample_rate
      // entries; its float64 running sum taken at every downsample_rate-th entry, differenced against
      // the previous one stored in float32, over 128, is the old histogram on the new bins. The zeros
      // add nothing to the running sum, so it runs over the upsampled entries only. (An old histogram
      // overrunning the array, which PyTorch rejects with a shape error, is cut at its end.)
      const int64_t upsampled = bins_ * kUpsampleRate;
      std::vector<double> integral(static_cast<std::size_t>(bins_));
      double running = 0;
      int64_t u = 0;
      for (int64_t j = 0; j < bins_; ++j) {
        const int64_t last = std::min(j * downsample_rate + downsample_rate - 1 - start_idx, upsampled - 1);
        for (; u <= last; ++u) running += double(old[std::size_t(u / kUpsampleRate)]);
        integral[std::size_t(j)] = running;
      }
      for (int64_t j = 0; j < bins_; ++j) {
        const double shifted = j == 0 ? 0.0 : double(static_cast<float>(integral[std::size_t(j - 1)]));
        hist[std::size_t(j)] += static_cast<float>((integral[std::size_t(j)] - shifted) / double(kUpsampleRate));
      }
    }
    new_min = combined_min, new_max = combined_max;
  }
  RawTensor host = RawTensor::empty({bins_}, kFloat32);
  std::copy(hist.begin(), hist.end(), host.data<float>());
  prim::copy_(histogram_.data(), host);
  set_value(min_val_, new_min);
  set_value(max_val_, new_max);
  return x;
}

float HistogramObserver::quantization_error(const std::vector<float>& hist, float lo, float hi, int64_t start_bin,
                                            int64_t end_bin) const {
  // PyTorch's _compute_quantization_error: widths in float64 (from .item()), the per-bin terms in
  // float32 tensors; each source bin's mass is spread uniformly and compared with the center of the
  // destination bins its two ends fall in
  const double bin_width = (double(hi) - double(lo)) / double(bins_);
  const double dst_bin_width = bin_width * double(end_bin - start_bin + 1) / double(kDstBins);
  if (dst_bin_width == 0.0) return 0.0f;
  const float bw = static_cast<float>(bin_width), dbw = static_cast<float>(dst_bin_width);
  const float half = static_cast<float>(dst_bin_width / 2), neg_half = static_cast<float>(-dst_bin_width / 2);
  const float last_dst = static_cast<float>(kDstBins - 1);
  // _get_norm(b, e, density) = density * ((e^3 - b^3) / 3), each step rounded to float32
  const auto cube = [](float v) { return v * v * v; };
  const float full_bin = (cube(half) - cube(neg_half)) / 3.0f;
  double sum = 0;   // PyTorch sums the float32 terms (norm.sum()); here in float64, rounded once
  for (int64_t i = 0; i < bins_; ++i) {
    const float begin = static_cast<float>(i - start_bin) * bw;
    const float end = begin + bw;
    const float dst_begin = std::min(std::max(div_floor(begin, dbw), 0.0f), last_dst);
    const float dst_begin_center = (dst_begin + 0.5f) * dbw;
    const float dst_end = std::min(std::max(div_floor(end, dbw), 0.0f), last_dst);
    const float density = hist[std::size_t(i)] / bw;
    float norm = 0.0f;
    const float delta_begin = begin - dst_begin_center;
    norm = norm + density * ((cube(half) - cube(delta_begin)) / 3.0f);
    norm = norm + (dst_end - dst_begin - 1.0f) * (density * full_bin);
    const float dst_end_center = dst_end * dbw + half;
    const float delta_end = end - dst_end_center;
    norm = norm + density * ((cube(delta_end) - cube(neg_half)) / 3.0f);
    sum += double(norm);
  }
  return static_cast<float>(sum);
}

std::pair<double, double> HistogramObserver::search_range() const {
  const float lo = host_value(min_val_), hi = host_value(max_val_);
  const std::vector<float> hist = histogram_.to_vector<float>();
  TG_CHECK(int64_t(hist.size()) == bins_, Error, "HistogramObserver: the histogram has ", hist.size(),
           " bins, expected ", bins_);
  if (lo == std::numeric_limits<float>::infinity() && hi == -std::numeric_limits<float>::infinity()) return {lo, hi};
  // PyTorch's _non_linear_param_search (after caffe2's NormMinimization::NonlinearQuantizationParamsSearch)
  const float bin_width = (hi - lo) / static_cast<float>(bins_);
  std::vector<float> csum(hist.size());   // torch.cumsum: float64 accumulator, float32 results
  double running = 0;
  for (std::size_t i = 0; i < hist.size(); ++i) csum[i] = static_cast<float>(running += double(hist[i]));
  const double total = static_cast<float>(running);   // torch.sum(histogram).item()
  const double stepsize = 1e-5;
  double alpha = 0.0, beta = 1.0, norm_min = std::numeric_limits<double>::infinity();
  int64_t start_bin = 0, end_bin = bins_ - 1;
  while (alpha < beta) {
    const double next_alpha = alpha + stepsize, next_beta = beta - stepsize;
    // the bins at the next quantiles (a float32 tensor compared with a Python float: in float32)
    const auto alpha_mass = static_cast<float>(next_alpha * total), beta_mass = static_cast<float>(next_beta * total);
    int64_t l = start_bin, r = end_bin;
    while (l < end_bin && csum[std::size_t(l)] < alpha_mass) ++l;
    while (r > start_bin && csum[std::size_t(r)] > beta_mass) --r;
    // move the side with more bins to skip
    int64_t next_start = start_bin, next_end = end_bin;
    if (l - start_bin > end_bin - r) {
      next_start = l;
      alpha = next_alpha;
    } else {
      next_end = r;
      beta = next_beta;
    }
    if (next_start == start_bin && next_end == end_bin) continue;
    const double norm = quantization_error(hist, lo, hi, next_start, next_end);
    if (norm > norm_min) break;
    norm_min = norm;
    start_bin = next_start;
    end_bin = next_end;
  }
  const float new_min = lo + bin_width * static_cast<float>(start_bin);
  const float new_max = lo + bin_width * static_cast<float>(end_bin + 1);
  return {new_min, new_max};
}

QParams HistogramObserver::calculate_qparams() const {
  const float lo = host_value(min_val_), hi = host_value(max_val_);
  if (lo == std::numeric_limits<float>::infinity() && hi == -std::numeric_limits<float>::infinity()) return {};
  const std::pair<double, double> range = search_range();
  return range_qparams(static_cast<float>(range.first), static_cast<float>(range.second),
                       host_value(Tensor(eps_.data().reshape({}))), symmetric_, dtype_, quant_min_, quant_max_);
}

double HistogramObserver::min_val() const { return min_val_.item(); }
double HistogramObserver::max_val() const { return max_val_.item(); }

std::string HistogramObserver::name() const {
  std::ostringstream os;
  os << "HistogramObserver(min_val=" << min_val() << ", max_val=" << max_val() << ")";
  return os.str();
}

std::unique_ptr<nn::Module> HistogramObserver::new_instance() const {
  return std::make_unique<HistogramObserver>(bins_, dtype_, symmetric_, reduce_range_);
}

FakeQuantizeBase::FakeQuantizeBase(int64_t channels) {
  fake_quant_enabled_ = Tensor(prim::full({1}, 1, kUInt8));
  observer_enabled_ = Tensor(prim::full({1}, 1, kUInt8));
  scale_ = Tensor(prim::full({channels}, 1, kFloat32));
  zero_point_ = Tensor(prim::full({channels}, 0, kInt32));
  register_buffer("fake_quant_enabled", fake_quant_enabled_);
  register_buffer("observer_enabled", observer_enabled_);
  register_buffer("scale", scale_);
  register_buffer("zero_point", zero_point_);
}

void FakeQuantizeBase::enable_fake_quant(bool on) { prim::fill_(fake_quant_enabled_.data(), on ? 1 : 0); }
void FakeQuantizeBase::enable_observer(bool on) { prim::fill_(observer_enabled_.data(), on ? 1 : 0); }
bool FakeQuantizeBase::fake_quant_enabled() const { return Tensor(fake_quant_enabled_.data().reshape({})).item() != 0; }
bool FakeQuantizeBase::observer_enabled() const { return Tensor(observer_enabled_.data().reshape({})).item() != 0; }

std::string FakeQuantizeBase::describe_switches(int64_t quant_min, int64_t quant_max) const {
  std::ostringstream os;
  os << "fake_quant_enabled=" << int(fake_quant_enabled()) << ", observer_enabled=" << int(observer_enabled())
     << ", quant_min=" << quant_min << ", quant_max=" << quant_max;
  return os.str();
}

FakeQuantize::FakeQuantize(double averaging_constant, DType dtype, bool symmetric, bool reduce_range)
    : FakeQuantizeBase(1),
      observer_(averaging_constant, dtype, symmetric, reduce_range),
      averaging_constant_(averaging_constant),
      dtype_(dtype),
      symmetric_(symmetric),
      reduce_range_(reduce_range) {
  register_module("activation_post_process", observer_);
}

Tensor FakeQuantize::forward(const Tensor& x) {
  if (observer_enabled()) {
    observer_(x.detach());
    const QParams p = observer_.calculate_qparams();
    set_value(scale_, p.scale);
    set_value(zero_point_, double(p.zero_point));
  }
  if (!fake_quant_enabled()) return x;
  return fake_quantize_per_tensor_affine(x, scale(), zero_point(), observer_.quant_min(), observer_.quant_max());
}

double FakeQuantize::scale() const { return Tensor(scale_.data().reshape({})).item(); }
int64_t FakeQuantize::zero_point() const { return Tensor(zero_point_.data().reshape({})).item<int64_t>(); }

std::string FakeQuantize::name() const {
  std::ostringstream os;
  os << "FakeQuantize(" << describe_switches(observer_.quant_min(), observer_.quant_max()) << ", scale=" << scale()
     << ", zero_point=" << zero_point() << ")";
  return os.str();
}

std::unique_ptr<nn::Module> FakeQuantize::new_instance() const {
  return std::make_unique<FakeQuantize>(averaging_constant_, dtype_, symmetric_, reduce_range_);
}

}  // namespace quantization
}  // namespace tg
