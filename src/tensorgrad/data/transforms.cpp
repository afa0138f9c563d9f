// data/transforms.cpp: the shape arithmetic, pixel formulas and random draws of the image transforms
// (data/transforms.h): torchvision's size and padding arguments, flips, padding, the centre window and
// the random window; resizing, the colour adjustments, the inverse-affine sampling of rotate and
// affine, the Gaussian blur (transforms::functional), and the random parameters of the transforms
// built on them. The transforms' classes themselves are the header's templates.
#include "tensorgrad/data/transforms.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace tg {
namespace data {
namespace transforms {
namespace detail {

namespace {

/// ShapeError unless x is defined with at least 2 dims (..., H, W).
void check_image(const Tensor& x, const char* who) {
  TG_CHECK(x.defined(), ShapeError, who, ": the input is an undefined tensor");
  TG_CHECK(x.dim() >= 2, ShapeError, who, ": expected a tensor image (..., H, W) with at least 2 dims, got ",
           tensor_meta_str(x.data()));
}

/// x (..., H, W) -> (..., h, w) from row top and column left: a view, as torchvision's crop of a tensor.
Tensor crop(const Tensor& x, int64_t top, int64_t left, int64_t h, int64_t w) {
  return x.narrow(-2, top, h).narrow(-1, left, w);
}

}  // namespace

void check_probability(double p, const char* who) {
  TG_CHECK(p >= 0 && p <= 1, DataError, who, ": p must be a probability in [0, 1], got ", p);
}

std::array<int64_t, 2> image_size(const std::vector<int64_t>& size, const char* who) {
  TG_CHECK(size.size() == 1 || size.size() == 2, DataError, who,
           ": If size is a sequence, it should have 1 or 2 values (got ", size.size(), ")");
  const std::array<int64_t, 2> hw{size[0], size.back()};
  TG_CHECK(hw[0] > 0 && hw[1] > 0, DataError, who, ": the crop size must be positive, got (", hw[0], ", ", hw[1], ")");
  return hw;
}

std::array<int64_t, 4> image_padding(const std::vector<int64_t>& padding, const char* who) {
  TG_CHECK(padding.size() == 1 || padding.size() == 2 || padding.size() == 4, DataError, who,
           ": Padding must be an int or a 1, 2, or 4 element sequence, not a ", padding.size(), " element sequence");
  for (const int64_t v : padding)
    TG_CHECK(v >= 0, DataError, who, ": padding must be non-negative, got ", v);
  if (padding.size() == 1) return {padding[0], padding[0], padding[0], padding[0]};
  if (padding.size() == 2) return {padding[0], padding[1], padding[0], padding[1]};   // (left/right, top/bottom)
  return {padding[0], padding[1], padding[2], padding[3]};
}

Tensor random_flip(const Tensor& x, double p, bool horizontal, const char* who) {
  check_image(x, who);
  // torchvision: `if torch.rand(1) < self.p`; rand is in [0, 1), so p = 0 never flips and p = 1 always does
  if (rand({1}).item<double>() < p) return flip(x, {horizontal ? int64_t(-1) : int64_t(-2)});
  return x;
}

Tensor pad_image(const Tensor& x, const std::array<int64_t, 4>& ltrb, double fill, const char* who) {
  check_image(x, who);
  if (ltrb[0] == 0 && ltrb[1] == 0 && ltrb[2] == 0 && ltrb[3] == 0) return x;
  // tg::pad's list runs from the last dim backwards: (left, right) of W, then (top, bottom) of H
  return pad(x, {ltrb[0], ltrb[2], ltrb[1], ltrb[3]}, "constant", fill);
}

Tensor center_crop(const Tensor& x, const std::array<int64_t, 2>& size, const char* who) {
  check_image(x, who);
  const int64_t h = size[0], w = size[1];
  Tensor img = x;
  if (h > img.size(-2) || w > img.size(-1)) {
    // torchvision pads a too-small image with zeros, the odd pixel going to the right or bottom
    const int64_t dh = std::max<int64_t>(h - img.size(-2), 0), dw = std::max<int64_t>(w - img.size(-1), 0);
    img = pad_image(img, {dw / 2, dh / 2, (dw + 1) / 2, (dh + 1) / 2}, 0.0, who);
  }
  const int64_t H = img.size(-2), W = img.size(-1);
  // torchvision: int(round((H - h) / 2.0)), Python's round halving to even, which nearbyint does under
  // the default rounding mode
  const auto top = static_cast<int64_t>(std::nearbyint(static_cast<double>(H - h) / 2.0));
  const auto left = static_cast<int64_t>(std::nearbyint(static_cast<double>(W - w) / 2.0));
  return crop(img, top, left, h, w);
}

Tensor random_crop(const Tensor& x, const std::array<int64_t, 2>& size, const std::array<int64_t, 4>& ltrb,
                   double fill, const char* who) {
  const Tensor img = pad_image(x, ltrb, fill, who);
  const int64_t H = img.size(-2), W = img.size(-1), h = size[0], w = size[1];
  TG_CHECK(h <= H && w <= W, ShapeError, who, ": Required crop size (", h, ", ", w,
           ") is larger than input image size (", H, ", ", W, ") after padding");
  if (h == H && w == W) return img;
  // torchvision's get_params: i = randint(0, H - h + 1), j = randint(0, W - w + 1), one draw each
  const int64_t top = randint(0, H - h + 1, {1}).item<int64_t>();
  const int64_t left = randint(0, W - w + 1, {1}).item<int64_t>();
  return crop(img, top, left, h, w);
}


namespace {

/// DTypeError unless x is floating: the pixel formulas assume values in [0, 1] (torchvision's float
/// images), and tg::interpolate takes floating tensors only.
void check_floating(const Tensor& x, const char* who) {
  TG_CHECK(is_floating(x.dtype()), DTypeError, who, ": expected a floating image tensor, got ", dtype_name(x.dtype()));
}

/// An image read to the host in double, row-major: `planes` planes of H x W (every leading dim, channels
/// included, flattened).
struct HostImage {
  std::vector<double> v;
  int64_t planes = 0, H = 0, W = 0;
};

HostImage to_host(const Tensor& x, const char* who) {
  check_image(x, who);
  check_floating(x, who);
  HostImage h;
  h.H = x.size(-2);
  h.W = x.size(-1);
  h.planes = h.H * h.W == 0 ? 0 : x.numel() / (h.H * h.W);
  h.v = x.to_vector<double>();
  return h;
}

/// v (row-major, shape) as a tensor of like's dtype on like's device.
Tensor from_host(const std::vector<double>& v, const Shape& shape, const Tensor& like) {
  return from_vector(v, shape, TensorOptions().dtype(kFloat64)).to(like.dtype()).to(like.device());
}

/// x's shape with the last two dims set to (h, w).
Shape with_hw(const Tensor& x, int64_t h, int64_t w) {
  Shape s = x.shape();
  s[s.size() - 2] = h;
  s[s.size() - 1] = w;
  return s;
}

/// A colour image (..., C, H, W) on the host: `images` images of C planes of HW pixels. ShapeError for
/// fewer than 3 dims or C other than 1 and 3 (torchvision's TypeError, its wording).
struct HostColor {
  std::vector<double> v;
  int64_t images = 0, C = 0, HW = 0;
};

HostColor color_host(const Tensor& x, const char* who) {
  TG_CHECK(x.defined(), ShapeError, who, ": the input is an undefined tensor");
  TG_CHECK(x.dim() >= 3, ShapeError, who, ": expected a tensor image (..., C, H, W) with at least 3 dims, got ",
           tensor_meta_str(x.data()));
  check_floating(x, who);
  HostColor h;
  h.C = x.size(-3);
  TG_CHECK(h.C == 1 || h.C == 3, ShapeError, who,
           ": Input image tensor permitted channel values are 1 or 3, but found ", h.C);
  h.HW = x.size(-2) * x.size(-1);
  h.images = h.HW == 0 ? 0 : x.numel() / (h.C * h.HW);
  h.v = x.to_vector<double>();
  return h;
}

double clamp01(double v) { return std::min(std::max(v, 0.0), 1.0); }

/// torchvision's luma weights (ITU-R 601-2).
double luma(double r, double g, double b) { return 0.2989 * r + 0.587 * g + 0.114 * b; }

/// The grayscale of each pixel of image n of an RGB host image (the values themselves for one channel).
std::vector<double> gray_of(const HostColor& h, int64_t n) {
  std::vector<double> g(static_cast<size_t>(h.HW));
  const double* base = h.v.data() + n * h.C * h.HW;
  for (int64_t p = 0; p < h.HW; ++p)
    g[static_cast<size_t>(p)] = h.C == 3 ? luma(base[p], base[h.HW + p], base[2 * h.HW + p]) : base[p];
  return g;
}

void check_factor(double factor, const char* name) {
  TG_CHECK(factor >= 0, DataError, name, " (", factor, ") is not non-negative.");
}

/// The (height, width) of resize's output for an H x W image (torchvision's rule).
std::array<int64_t, 2> resized_size(int64_t H, int64_t W, const std::vector<int64_t>& size,
                                    std::optional<int64_t> max_size) {
  if (size.size() == 2) return {size[0], size[1]};
  const int64_t shorter = std::min(H, W), longer = std::max(H, W);
  int64_t new_short = size[0];
  // int(requested * long / short): Python's true division then truncation
  auto new_long = static_cast<int64_t>(static_cast<double>(new_short) * static_cast<double>(longer) /
                                       static_cast<double>(shorter));
  if (max_size && new_long > *max_size) {
    new_short = static_cast<int64_t>(static_cast<double>(*max_size) * static_cast<double>(new_short) /
                                     static_cast<double>(new_long));
    new_long = *max_size;
  }
  return W <= H ? std::array<int64_t, 2>{new_long, new_short} : std::array<int64_t, 2>{new_short, new_long};
}

/// The (out, in) weights of PyTorch's antialiased bilinear resize along one dim: output i averages the
/// inputs under a triangle of half-width max(scale, 1) input pixels centred at scale (i + 0.5),
/// scale = in / out, normalised to sum 1 (an upscale gives plain bilinear weights).
std::vector<double> antialias_weights(int64_t in, int64_t out) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double support = scale >= 1.0 ? scale : 1.0;
  const double invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
  std::vector<double> m(static_cast<size_t>(out * in), 0.0);
  for (int64_t i = 0; i < out; ++i) {
    const double center = scale * (static_cast<double>(i) + 0.5);
    // the window [lo, hi) of inputs, as PyTorch truncates it
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in);
    double total = 0;
    for (int64_t j = lo; j < hi; ++j) {
      const double t = std::abs((static_cast<double>(j) - center + 0.5) * invscale);
      const double w = t < 1.0 ? 1.0 - t : 0.0;
      m[static_cast<size_t>(i * in + j)] = w;
      total += w;
    }
    if (total != 0)
      for (int64_t j = lo; j < hi; ++j) m[static_cast<size_t>(i * in + j)] /= total;
  }
  return m;
}

/// torchvision's _get_inverse_affine_matrix: the forward map is T * C * RSS * C^-1, RSS a rotation by
/// angle with shear (sx, sy) and scale, C the move to center, T the translation (all in coordinates
/// centred on the image). Returns the 2 x 3 inverse, row-major, which maps an output point to its
/// source: RSS^-1 (p - C - T) + C.
std::array<double, 6> inverse_affine_matrix(const std::array<double, 2>& center, double angle,
                                            const std::array<double, 2>& translate, double scale,
                                            const std::array<double, 2>& shear) {
  const double pi = 3.14159265358979323846;
  const double rot = angle * pi / 180.0, sx = shear[0] * pi / 180.0, sy = shear[1] * pi / 180.0;
  // RSS without the scale: rotation times the shear matrix; its determinant is 1
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  std::array<double, 6> m{d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0};
  const double ox = -center[0] - translate[0], oy = -center[1] - translate[1];
  m[2] = m[0] * ox + m[1] * oy + center[0];
  m[5] = m[3] * ox + m[4] * oy + center[1];
  return m;
}

/// The (width, height) holding the whole image mapped by m (torchvision's expand size: the corners'
/// bounding box, in float32, truncated to 1e-4 before ceil and floor).
std::array<int64_t, 2> affine_output_size(const std::array<double, 6>& m, int64_t w, int64_t h) {
  const float hw = 0.5f * static_cast<float>(w), hh = 0.5f * static_cast<float>(h);
  const float pts[4][2] = {{-hw, -hh}, {-hw, hh}, {hw, hh}, {hw, -hh}};
  float lo[2] = {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity()};
  float hi[2] = {-std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
  for (const auto& p : pts)
    for (int r = 0; r < 2; ++r) {
      const float v = p[0] * static_cast<float>(m[3 * r]) + p[1] * static_cast<float>(m[3 * r + 1]) +
                      static_cast<float>(m[3 * r + 2]);
      lo[r] = std::min(lo[r], v);
      hi[r] = std::max(hi[r], v);
    }
  std::array<int64_t, 2> size{};
  const float half[2] = {hw, hh};
  for (int r = 0; r < 2; ++r) {
    const float tol = 1e-4f, inv_tol = 1.0f / tol;
    const float cmax = std::ceil(std::trunc((hi[r] + half[r]) * inv_tol) * tol);
    const float cmin = std::floor(std::trunc((lo[r] + half[r]) * inv_tol) * tol);
    size[static_cast<size_t>(r)] = static_cast<int64_t>(cmax - cmin);
  }
  return size;
}

/// img (..., H, W) sampled at the inverse map m of each output pixel centre (oh x ow): the output pixel
/// (i, j) reads the input at x = m0 u + m1 v + m2 + (W - 1) / 2, y = m3 u + m4 v + m5 + (H - 1) / 2,
/// (u, v) = (j - (ow - 1) / 2, i - (oh - 1) / 2) (torchvision's affine grid through grid_sample,
/// align_corners=false, zero padding). Nearest rounds half to even, as grid_sample; bilinear blends
/// the four neighbours, those outside counting zero. With fill, torchvision's mask: nearest pixels
/// from outside are fill, bilinear ones mask * (value - fill) + fill, mask the blend's weight inside.
Tensor grid_transform(const Tensor& img, const std::array<double, 6>& m, int64_t oh, int64_t ow,
                      InterpolationMode mode, std::optional<double> fill, const char* who) {
  const HostImage h = to_host(img, who);
  const int64_t H = h.H, W = h.W;
  // per output pixel: up to four (source index, weight) pairs, shared by every plane
  const int64_t n = oh * ow;
  std::vector<int64_t> idx(static_cast<size_t>(4 * n), 0);
  std::vector<double> wt(static_cast<size_t>(4 * n), 0.0);
  for (int64_t i = 0; i < oh; ++i)
    for (int64_t j = 0; j < ow; ++j) {
      const double u = static_cast<double>(j) - (static_cast<double>(ow) - 1.0) * 0.5;
      const double v = static_cast<double>(i) - (static_cast<double>(oh) - 1.0) * 0.5;
      const double x = m[0] * u + m[1] * v + m[2] + (static_cast<double>(W) - 1.0) * 0.5;
      const double y = m[3] * u + m[4] * v + m[5] + (static_cast<double>(H) - 1.0) * 0.5;
      const size_t o = static_cast<size_t>(4 * (i * ow + j));
      if (mode == InterpolationMode::Nearest) {
        const auto xi = static_cast<int64_t>(std::nearbyint(x)), yi = static_cast<int64_t>(std::nearbyint(y));
        if (xi >= 0 && xi < W && yi >= 0 && yi < H) {
          idx[o] = yi * W + xi;
          wt[o] = 1.0;
        }
      } else {
        const double x0 = std::floor(x), y0 = std::floor(y);
        const double fx = x - x0, fy = y - y0;
        const double ws[4] = {(1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy};
        for (int k = 0; k < 4; ++k) {
          const auto xi = static_cast<int64_t>(x0) + (k & 1), yi = static_cast<int64_t>(y0) + (k >> 1);
          if (xi >= 0 && xi < W && yi >= 0 && yi < H) {
            idx[o + static_cast<size_t>(k)] = yi * W + xi;
            wt[o + static_cast<size_t>(k)] = ws[k];
          }
        }
      }
    }
  std::vector<double> out(static_cast<size_t>(h.planes * n));
  for (int64_t p = 0; p < h.planes; ++p) {
    const double* src = h.v.data() + p * H * W;
    for (int64_t q = 0; q < n; ++q) {
      double value = 0, mask = 0;
      for (size_t k = 0; k < 4; ++k) {
        const size_t o = static_cast<size_t>(4 * q) + k;
        if (wt[o] != 0) {
          value += wt[o] * src[idx[o]];
          mask += wt[o];
        }
      }
      if (fill) {
        if (mode == InterpolationMode::Nearest)
          value = mask < 0.5 ? *fill : value;
        else
          value = mask * (value - *fill) + *fill;
      }
      out[static_cast<size_t>(p * n + q)] = value;
    }
  }
  return from_host(out, with_hw(img, oh, ow), img);
}

/// Reflection of index t into [0, n) about the edge elements (torch's "reflect" pad), for |overrun| < n.
int64_t reflect(int64_t t, int64_t n) {
  if (t < 0) return -t;
  if (t >= n) return 2 * (n - 1) - t;
  return t;
}

/// The normalised Gaussian kernel of k taps, exp(-x^2 / (2 sigma^2)) at x = -(k - 1) / 2 .. (k - 1) / 2.
std::vector<double> gaussian_kernel(int64_t k, double sigma) {
  std::vector<double> g(static_cast<size_t>(k));
  double total = 0;
  for (int64_t i = 0; i < k; ++i) {
    const double x = static_cast<double>(i) - static_cast<double>(k - 1) * 0.5;
    g[static_cast<size_t>(i)] = std::exp(-x * x / (2.0 * sigma * sigma));
    total += g[static_cast<size_t>(i)];
  }
  for (double& v : g) v /= total;
  return g;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// transforms::functional's helpers and the random parameters

void check_resize_args(const std::vector<int64_t>& size, std::optional<int64_t> max_size, const char* who) {
  TG_CHECK(size.size() == 1 || size.size() == 2, DataError, who,
           ": size can be an integer, a sequence of one or two integers, but got ", size.size(), " values");
  for (const int64_t s : size) TG_CHECK(s > 0, DataError, who, ": the size must be positive, got ", s);
  if (max_size) {
    TG_CHECK(size.size() == 1, DataError, who,
             ": max_size should only be passed if size specifies the length of the smaller edge, i.e. size "
             "should be an int");
    TG_CHECK(*max_size > size[0], DataError, who, ": max_size = ", *max_size,
             " must be strictly greater than the requested size for the smaller edge size = ", size[0]);
  }
}

double uniform(double low, double high) { return low + (high - low) * rand({1}, TensorOptions().dtype(kFloat64)).item<double>(); }

std::array<int64_t, 4> resized_crop_window(int64_t H, int64_t W, const std::array<double, 2>& scale,
                                           const std::array<double, 2>& ratio) {
  const double area = static_cast<double>(H) * static_cast<double>(W);
  const double log_lo = std::log(ratio[0]), log_hi = std::log(ratio[1]);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target_area = area * uniform(scale[0], scale[1]);
    const double aspect = std::exp(uniform(log_lo, log_hi));
    // int(round(...)): Python's round halves to even, as nearbyint
    const auto w = static_cast<int64_t>(std::nearbyint(std::sqrt(target_area * aspect)));
    const auto h = static_cast<int64_t>(std::nearbyint(std::sqrt(target_area / aspect)));
    if (w > 0 && w <= W && h > 0 && h <= H) {
      const int64_t top = randint(0, H - h + 1, {1}).item<int64_t>();
      const int64_t left = randint(0, W - w + 1, {1}).item<int64_t>();
      return {top, left, h, w};
    }
  }
  // the fallback: the centre window of the whole image, narrowed to the nearest allowed ratio
  const double in_ratio = static_cast<double>(W) / static_cast<double>(H);
  int64_t w = W, h = H;
  if (in_ratio < ratio[0]) {
    h = static_cast<int64_t>(std::nearbyint(static_cast<double>(w) / ratio[0]));
  } else if (in_ratio > ratio[1]) {
    w = static_cast<int64_t>(std::nearbyint(static_cast<double>(h) * ratio[1]));
  }
  return {(H - h) / 2, (W - w) / 2, h, w};
}

std::optional<std::array<double, 2>> jitter_range(const std::vector<double>& value, const char* name, double center,
                                                  std::array<double, 2> bound, bool clip_first_on_zero) {
  TG_CHECK(value.size() == 1 || value.size() == 2, DataError, "ColorJitter: ", name,
           " should be a single number or a sequence with length 2, got ", value.size(), " values");
  std::array<double, 2> r{value[0], value.back()};
  if (value.size() == 1) {
    TG_CHECK(value[0] >= 0, DataError, "ColorJitter: If ", name, " is a single number, it must be non negative.");
    r = {center - value[0], center + value[0]};
    if (clip_first_on_zero) r[0] = std::max(r[0], 0.0);
  }
  TG_CHECK(bound[0] <= r[0] && r[0] <= r[1] && r[1] <= bound[1], DataError, "ColorJitter: ", name,
           " values should be between (", bound[0], ", ", bound[1], ") and increasing, but got (", r[0], ", ", r[1],
           ").");
  if (r[0] == center && r[1] == center) return std::nullopt;
  return r;
}

Tensor color_jitter(const Tensor& img, const std::array<std::optional<std::array<double, 2>>, 4>& ranges) {
  const std::vector<int64_t> order = randperm(4).to_vector<int64_t>();
  // the factors are drawn in the fixed order brightness, contrast, saturation, hue, as torchvision does
  std::array<double, 4> factor{};
  for (size_t k = 0; k < 4; ++k)
    if (ranges[k]) factor[k] = uniform((*ranges[k])[0], (*ranges[k])[1]);
  Tensor out = img;
  for (const int64_t k : order) {
    if (!ranges[static_cast<size_t>(k)]) continue;
    const double f = factor[static_cast<size_t>(k)];
    if (k == 0) out = functional::adjust_brightness(out, f);
    if (k == 1) out = functional::adjust_contrast(out, f);
    if (k == 2) out = functional::adjust_saturation(out, f);
    if (k == 3) out = functional::adjust_hue(out, f);
  }
  return out;
}

std::array<double, 2> degree_range(const std::vector<double>& degrees, const char* who) {
  TG_CHECK(degrees.size() == 1 || degrees.size() == 2, DataError, who,
           ": If degrees is a sequence, it must be of len 2, got ", degrees.size(), " values");
  if (degrees.size() == 1) {
    TG_CHECK(degrees[0] >= 0, DataError, who, ": If degrees is a single number, it must be positive.");
    return {-degrees[0], degrees[0]};
  }
  return {degrees[0], degrees[1]};
}

std::vector<double> shear_ranges(const std::vector<double>& shear) {
  if (shear.empty()) return {};
  TG_CHECK(shear.size() == 1 || shear.size() == 2 || shear.size() == 4, DataError,
           "RandomAffine: shear should be a single number or a sequence of length 2 or 4, got ", shear.size(),
           " values");
  if (shear.size() == 1) {
    TG_CHECK(shear[0] >= 0, DataError, "RandomAffine: If shear is a single number, it must be positive.");
    return {-shear[0], shear[0], 0.0, 0.0};
  }
  if (shear.size() == 2) return {shear[0], shear[1], 0.0, 0.0};
  return shear;
}

Tensor random_affine(const Tensor& img, const std::array<double, 2>& degrees,
                     const std::optional<std::array<double, 2>>& translate,
                     const std::optional<std::array<double, 2>>& scale, const std::vector<double>& shear,
                     InterpolationMode interpolation, double fill, const std::optional<std::array<double, 2>>& center) {
  check_image(img, "RandomAffine");
  const auto H = static_cast<double>(img.size(-2)), W = static_cast<double>(img.size(-1));
  // torchvision's draw order: angle, tx, ty, scale, shear x, shear y
  const double angle = uniform(degrees[0], degrees[1]);
  std::array<double, 2> t{0.0, 0.0};
  if (translate) {
    const double max_dx = (*translate)[0] * W, max_dy = (*translate)[1] * H;
    t[0] = std::nearbyint(uniform(-max_dx, max_dx));
    t[1] = std::nearbyint(uniform(-max_dy, max_dy));
  }
  const double s = scale ? uniform((*scale)[0], (*scale)[1]) : 1.0;
  std::array<double, 2> sh{0.0, 0.0};
  if (!shear.empty()) {
    sh[0] = uniform(shear[0], shear[1]);
    // a y range drawn only when four values were given (two are stored with a (0, 0) y range)
    if (shear[2] != 0.0 || shear[3] != 0.0) sh[1] = uniform(shear[2], shear[3]);
  }
  return functional::affine(img, angle, t, s, sh, interpolation, fill, center);
}

}  // namespace detail

// ------------------------------------------------------------------------------------------------
// transforms::functional

namespace functional {

Tensor resize(const Tensor& img, const std::vector<int64_t>& size, InterpolationMode interpolation,
              std::optional<int64_t> max_size, bool antialias) {
  const char* who = "resize";
  detail::check_resize_args(size, max_size, who);
  detail::check_image(img, who);
  detail::check_floating(img, who);
  const int64_t H = img.size(-2), W = img.size(-1);
  const std::array<int64_t, 2> out = detail::resized_size(H, W, size, max_size);
  if (out[0] == H && out[1] == W) return img;
  if (interpolation == InterpolationMode::Bilinear && antialias && (out[0] < H || out[1] < W)) {
    // PyTorch's antialiased bilinear is separable: rows (oh, H) @ img @ columns (ow, W)^T
    const Tensor rows = detail::from_host(detail::antialias_weights(H, out[0]), {out[0], H}, img);
    const Tensor cols = detail::from_host(detail::antialias_weights(W, out[1]), {out[1], W}, img);
    return matmul(matmul(rows, img), cols.transpose(0, 1));
  }
  // tg::interpolate takes (N, C, H, W): every leading dim becomes N
  const int64_t planes = H * W == 0 ? 0 : img.numel() / (H * W);
  const Tensor x4 = img.reshape({planes, 1, H, W});
  const Tensor y = interpolation == InterpolationMode::Nearest
                       ? interpolate(x4, {out[0], out[1]}, {}, "nearest")
                       : interpolate(x4, {out[0], out[1]}, {}, "bilinear", false);
  return y.reshape(detail::with_hw(img, out[0], out[1]));
}

Tensor resized_crop(const Tensor& img, int64_t top, int64_t left, int64_t height, int64_t width,
                    const std::vector<int64_t>& size, InterpolationMode interpolation, bool antialias) {
  detail::check_image(img, "resized_crop");
  return resize(detail::crop(img, top, left, height, width), size, interpolation, std::nullopt, antialias);
}

Tensor rgb_to_grayscale(const Tensor& img, int64_t num_output_channels) {
  TG_CHECK(num_output_channels == 1 || num_output_channels == 3, DataError,
           "rgb_to_grayscale: num_output_channels should be either 1 or 3, got ", num_output_channels);
  const detail::HostColor h = detail::color_host(img, "rgb_to_grayscale");
  std::vector<double> out;
  out.reserve(static_cast<size_t>(h.images * num_output_channels * h.HW));
  for (int64_t n = 0; n < h.images; ++n) {
    const std::vector<double> g = detail::gray_of(h, n);
    for (int64_t c = 0; c < num_output_channels; ++c) out.insert(out.end(), g.begin(), g.end());
  }
  Shape shape = img.shape();
  shape[shape.size() - 3] = num_output_channels;
  return detail::from_host(out, shape, img);
}

Tensor adjust_brightness(const Tensor& img, double brightness_factor) {
  detail::check_factor(brightness_factor, "brightness_factor");
  const detail::HostImage h = detail::to_host(img, "adjust_brightness");
  std::vector<double> out(h.v.size());
  for (size_t k = 0; k < out.size(); ++k) out[k] = detail::clamp01(brightness_factor * h.v[k]);
  return detail::from_host(out, img.shape(), img);
}

Tensor adjust_contrast(const Tensor& img, double contrast_factor) {
  detail::check_factor(contrast_factor, "contrast_factor");
  const detail::HostColor h = detail::color_host(img, "adjust_contrast");
  std::vector<double> out(h.v.size());
  const int64_t per_image = h.C * h.HW;
  for (int64_t n = 0; n < h.images; ++n) {
    // the mean of the image's grayscale (of the image itself for one channel)
    const std::vector<double> g = detail::gray_of(h, n);
    double mean = 0;
    for (const double v : g) mean += v;
    mean /= static_cast<double>(h.HW);
    for (int64_t k = n * per_image; k < (n + 1) * per_image; ++k)
      out[static_cast<size_t>(k)] =
          detail::clamp01(contrast_factor * h.v[static_cast<size_t>(k)] + (1.0 - contrast_factor) * mean);
  }
  return detail::from_host(out, img.shape(), img);
}

Tensor adjust_saturation(const Tensor& img, double saturation_factor) {
  detail::check_factor(saturation_factor, "saturation_factor");
  const detail::HostColor h = detail::color_host(img, "adjust_saturation");
  if (h.C == 1) return img;
  std::vector<double> out(h.v.size());
  for (int64_t n = 0; n < h.images; ++n) {
    const std::vector<double> g = detail::gray_of(h, n);
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t p = 0; p < h.HW; ++p) {
        const auto k = static_cast<size_t>((n * 3 + c) * h.HW + p);
        out[k] = detail::clamp01(saturation_factor * h.v[k] + (1.0 - saturation_factor) * g[static_cast<size_t>(p)]);
      }
  }
  return detail::from_host(out, img.shape(), img);
}

Tensor adjust_hue(const Tensor& img, double hue_factor) {
  TG_CHECK(hue_factor >= -0.5 && hue_factor <= 0.5, DataError, "adjust_hue: hue_factor (", hue_factor,
           ") is not in [-0.5, 0.5].");
  const detail::HostColor h = detail::color_host(img, "adjust_hue");
  if (h.C == 1) return img;
  std::vector<double> out(h.v.size());
  for (int64_t n = 0; n < h.images; ++n)
    for (int64_t p = 0; p < h.HW; ++p) {
      const auto kr = static_cast<size_t>(n * 3 * h.HW + p), kg = kr + static_cast<size_t>(h.HW),
                 kb = kg + static_cast<size_t>(h.HW);
      const double r = h.v[kr], g = h.v[kg], b = h.v[kb];
      // RGB -> HSV (hue in turns), with hue and saturation 0 for a gray pixel
      const double maxc = std::max(r, std::max(g, b)), minc = std::min(r, std::min(g, b));
      const bool gray = maxc == minc;
      const double range = maxc - minc;
      const double s = range / (gray ? 1.0 : maxc);
      const double div = gray ? 1.0 : range;
      const double rc = (maxc - r) / div, gc = (maxc - g) / div, bc = (maxc - b) / div;
      double hue = 0;
      if (maxc == r)
        hue = bc - gc;
      else if (maxc == g)
        hue = 2.0 + rc - bc;
      else
        hue = 4.0 + gc - rc;
      hue = std::fmod(hue / 6.0 + 1.0, 1.0);
      // the shift, modulo one turn
      hue += hue_factor;
      hue -= std::floor(hue);
      // HSV -> RGB by the sector of the hue
      const double h6 = hue * 6.0, sector = std::floor(h6), f = h6 - sector;
      const double v = maxc;
      const double pp = detail::clamp01(v * (1.0 - s));
      const double q = detail::clamp01(v * (1.0 - s * f));
      const double t = detail::clamp01(v * (1.0 - s * (1.0 - f)));
      const auto i = static_cast<int64_t>(sector) % 6;
      const double rs[6] = {v, q, pp, pp, t, v}, gs[6] = {t, v, v, q, pp, pp}, bs[6] = {pp, pp, t, v, v, q};
      out[kr] = rs[i];
      out[kg] = gs[i];
      out[kb] = bs[i];
    }
  return detail::from_host(out, img.shape(), img);
}

Tensor rotate(const Tensor& img, double angle, InterpolationMode interpolation, bool expand,
              std::optional<std::array<double, 2>> center, std::optional<double> fill) {
  const char* who = "rotate";
  detail::check_image(img, who);
  detail::check_floating(img, who);
  double a = std::fmod(angle, 360.0);   // Python's angle % 360, in [0, 360)
  if (a < 0) a += 360.0;
  if (!center) {
    // multiples of 90 degrees about the centre permute the pixels exactly (torchvision's rot90 paths)
    if (a == 0) return img;
    if (a == 180) return flip(img, {-2, -1});
    if (expand || img.size(-1) == img.size(-2)) {
      if (a == 90) return flip(img, {-1}).transpose(-2, -1).contiguous();
      if (a == 270) return flip(img, {-2}).transpose(-2, -1).contiguous();
    }
  }
  const int64_t H = img.size(-2), W = img.size(-1);
  std::array<double, 2> c{0.0, 0.0};
  if (center) c = {(*center)[0] - 0.5 * static_cast<double>(W), (*center)[1] - 0.5 * static_cast<double>(H)};
  // the image's y axis points down: a counter-clockwise rotation is the affine map's -angle
  const std::array<double, 6> m = detail::inverse_affine_matrix(c, -a, {0.0, 0.0}, 1.0, {0.0, 0.0});
  std::array<int64_t, 2> wh{W, H};
  if (expand) wh = detail::affine_output_size(m, W, H);
  return detail::grid_transform(img, m, wh[1], wh[0], interpolation, fill, who);
}

Tensor affine(const Tensor& img, double angle, std::array<double, 2> translate, double scale,
              std::array<double, 2> shear, InterpolationMode interpolation, std::optional<double> fill,
              std::optional<std::array<double, 2>> center) {
  const char* who = "affine";
  TG_CHECK(scale > 0, DataError, who, ": Argument scale should be positive");
  detail::check_image(img, who);
  const int64_t H = img.size(-2), W = img.size(-1);
  std::array<double, 2> c{0.0, 0.0};
  if (center) c = {(*center)[0] - 0.5 * static_cast<double>(W), (*center)[1] - 0.5 * static_cast<double>(H)};
  const std::array<double, 6> m = detail::inverse_affine_matrix(c, angle, translate, scale, shear);
  return detail::grid_transform(img, m, H, W, interpolation, fill, who);
}

Tensor gaussian_blur(const Tensor& img, const std::vector<int64_t>& kernel_size, const std::vector<double>& sigma) {
  const char* who = "gaussian_blur";
  TG_CHECK(kernel_size.size() == 1 || kernel_size.size() == 2, DataError, who,
           ": If kernel_size is a sequence its length should be 2. Got ", kernel_size.size());
  const std::array<int64_t, 2> k{kernel_size[0], kernel_size.back()};   // (x, y)
  for (const int64_t v : k)
    TG_CHECK(v > 0 && v % 2 == 1, DataError, who, ": kernel_size should have odd and positive integers. Got (",
             k[0], ", ", k[1], ")");
  TG_CHECK(sigma.size() <= 2, DataError, who, ": If sigma is a sequence, its length should be 2. Got ", sigma.size());
  std::array<double, 2> s{};
  if (sigma.empty())
    s = {0.15 * static_cast<double>(k[0]) + 0.35, 0.15 * static_cast<double>(k[1]) + 0.35};
  else
    s = {sigma[0], sigma.back()};
  TG_CHECK(s[0] > 0 && s[1] > 0, DataError, who, ": sigma should have positive values. Got (", s[0], ", ", s[1], ")");
  const detail::HostImage h = detail::to_host(img, who);
  const int64_t H = h.H, W = h.W, px = k[0] / 2, py = k[1] / 2;
  TG_CHECK(px < W && py < H, ShapeError, who, ": Padding size should be less than the corresponding input dimension, "
           "but got: padding (", px, ", ", py, ") for an image of size (", H, ", ", W, ")");
  const std::vector<double> kx = detail::gaussian_kernel(k[0], s[0]), ky = detail::gaussian_kernel(k[1], s[1]);
  // Separable: along the width, then along the height. A pass sums the weights times the neighbours
  // of (i, j) along its axis, the border reflected.
  auto pass = [&](const std::vector<double>& src, const std::vector<double>& w, int64_t radius, bool along_width) {
    std::vector<double> dst(src.size());
    for (int64_t p = 0; p < h.planes; ++p)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          double acc = 0;
          for (int64_t t = 0; t < static_cast<int64_t>(w.size()); ++t) {
            const int64_t si = along_width ? i : detail::reflect(i + t - radius, H);
            const int64_t sj = along_width ? detail::reflect(j + t - radius, W) : j;
            acc += w[static_cast<size_t>(t)] * src[static_cast<size_t>((p * H + si) * W + sj)];
          }
          dst[static_cast<size_t>((p * H + i) * W + j)] = acc;
        }
    return dst;
  };
  const std::vector<double> out = pass(pass(h.v, kx, px, true), ky, py, false);
  return detail::from_host(out, img.shape(), img);
}

}  // namespace functional
}  // namespace transforms
}  // namespace data
}  // namespace tg
