// data/transforms.cpp: the shape arithmetic and the random draws of the image transforms
// (data/transforms.h): torchvision's size and padding arguments, flips, padding, the centre window and
// the random window. The transforms' classes themselves are the header's templates.
#include "tensorgrad/data/transforms.h"

#include <cmath>

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

}  // namespace detail
}  // namespace transforms
}  // namespace data
}  // namespace tg
