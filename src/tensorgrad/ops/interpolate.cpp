// ops/interpolate.cpp: interpolate (torch.nn.functional.interpolate) in modes nearest, linear and
// bilinear, as compositions: each resized dim is an index_select of source positions (nearest) or the
// blend of two of them (linear; bilinear resizes H, then W), so it runs on every backend and autograd
// differentiates it (index_select's gradient adds back into the sources). The source positions follow
// PyTorch's rules (area_pixel_compute_source_index and nearest_idx in ATen's UpSample.h), so the values
// and gradients are PyTorch's up to rounding.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "tensorgrad/ops/creation.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/prim/prim.h"

namespace tg {

namespace {

/// PyTorch's scale of one dim: output position -> source position factor.
double source_scale(int64_t in, int64_t out, std::optional<double> scale_factor, bool align_corners) {
  if (align_corners) return out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  if (scale_factor && *scale_factor > 0) return 1.0 / *scale_factor;
  return static_cast<double>(in) / static_cast<double>(out);
}

/// int64 positions on `device`.
Tensor positions(const std::vector<int64_t>& v, Device device) {
  return Tensor(from_vector(v, {static_cast<int64_t>(v.size())}).data().to(device));
}

/// x resized along dim d to `out` positions by nearest neighbour: source floor(o scale), in float as
/// PyTorch computes it, capped at in - 1 (the same or twice the size are exact shortcuts there too).
Tensor nearest_dim(const Tensor& x, int64_t d, int64_t out, std::optional<double> scale_factor) {
  const int64_t in = x.shape()[d];
  const float scale = static_cast<float>(source_scale(in, out, scale_factor, false));
  std::vector<int64_t> src(static_cast<std::size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    int64_t i = out == in ? o : out == 2 * in ? o >> 1 : static_cast<int64_t>(std::floor(static_cast<float>(o) * scale));
    src[static_cast<std::size_t>(o)] = i < in - 1 ? i : in - 1;
  }
  return index_select(x, d, positions(src, x.device()));
}

/// x resized along dim d to `out` positions by linear interpolation between the two nearest sources,
/// weights 1 - lambda and lambda (PyTorch's linear rule, half-pixel centres unless align_corners).
Tensor linear_dim(const Tensor& x, int64_t d, int64_t out, std::optional<double> scale_factor, bool align_corners) {
  const int64_t in = x.shape()[d];
  const double scale = source_scale(in, out, scale_factor, align_corners);
  std::vector<int64_t> lo(static_cast<std::size_t>(out)), hi(static_cast<std::size_t>(out));
  std::vector<double> lambda(static_cast<std::size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    double src = align_corners ? scale * static_cast<double>(o) : scale * (static_cast<double>(o) + 0.5) - 0.5;
    if (src < 0) src = 0;
    const int64_t i0 = static_cast<int64_t>(src);
    lo[static_cast<std::size_t>(o)] = i0;
    hi[static_cast<std::size_t>(o)] = i0 < in - 1 ? i0 + 1 : i0;
    lambda[static_cast<std::size_t>(o)] = src - static_cast<double>(i0);
  }
  // the weights broadcast along dim d: shape (out, 1, ..., 1) with x.dim() - 1 - d trailing ones
  Shape wshape(static_cast<std::size_t>(x.dim() - d), 1);
  wshape[0] = out;
  const Tensor w1 = Tensor(from_vector(lambda, wshape).data().to(x.dtype()).to(x.device()));
  const Tensor w0 = sub(scalar_like(1.0, w1), w1);
  return add(mul(index_select(x, d, positions(lo, x.device())), w0), mul(index_select(x, d, positions(hi, x.device())), w1));
}

}  // namespace

Tensor interpolate(const Tensor& input, IntArrayRef size, const std::vector<double>& scale_factor,
                   const std::string& mode, std::optional<bool> align_corners) {
  const char* op = "interpolate";
  const int64_t spatial = input.dim() - 2;
  TG_CHECK(spatial >= 1, ShapeError, op, ": expected an input of shape (N, C, ...) with at least one spatial dim, got ",
           shape_str(input.shape()));
  TG_CHECK(mode == "nearest" || mode == "linear" || mode == "bilinear", Error, op, ": mode '", mode,
           "' is not supported: nearest, linear or bilinear");
  TG_CHECK(mode != "linear" || spatial == 1, ShapeError, op, ": Got ", input.dim(),
           "D input, but linear mode needs 3D input (N, C, L)");
  TG_CHECK(mode != "bilinear" || spatial == 2, ShapeError, op, ": Got ", input.dim(),
           "D input, but bilinear mode needs 4D input (N, C, H, W)");
  TG_CHECK(mode != "nearest" || !align_corners.has_value(), Error, op,
           ": align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear");
  TG_CHECK(size.empty() != scale_factor.empty(), Error, op, ": only one of size or scale_factor should be defined");
  prim::check_floating(op, input.data());
  const std::size_t n = size.empty() ? scale_factor.size() : size.size();
  TG_CHECK(n == 1 || n == static_cast<std::size_t>(spatial), ShapeError, op, ": Input and output must have the same number of spatial dimensions, but got input with spatial dimensions of ",
           shape_str(Shape(input.shape().begin() + 2, input.shape().end())), " and output size of ",
           size.empty() ? "a scale_factor of " + std::to_string(scale_factor.size()) + " values" : shape_str(size), ".");
  Tensor y = input;
  for (int64_t k = 0; k < spatial; ++k) {
    const int64_t d = 2 + k, in = input.shape()[d];
    const std::size_t at = n == 1 ? 0 : static_cast<std::size_t>(k);
    std::optional<double> factor;
    int64_t out;
    if (!size.empty()) {
      out = size[at];
    } else {
      factor = scale_factor[at];
      TG_CHECK(*factor > 0, Error, op, ": scale_factor must be positive, got ", *factor);
      out = static_cast<int64_t>(std::floor(static_cast<double>(in) * *factor));
    }
    TG_CHECK(out > 0 && in > 0, ShapeError, op, ": Input and output sizes should be greater than 0, but got input (",
             shape_str(Shape(input.shape().begin() + 2, input.shape().end())), ") and an output size of ", out,
             " in spatial dim ", k);
    y = mode == "nearest" ? nearest_dim(y, d, out, factor) : linear_dim(y, d, out, factor, align_corners.value_or(false));
  }
  return y.data().storage() == input.data().storage() ? clone(y) : y;
}

}  // namespace tg
