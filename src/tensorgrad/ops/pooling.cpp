// ops/pooling.cpp: the pooling ops composed of other ops: max_pool1d, avg_pool1d and adaptive_avg_pool1d
// over the 2-D pools of ops/conv.cpp (a height of 1), and adaptive_max_pool3d / adaptive_max_pool2d /
// adaptive_max_pool1d of index_select and amax. Only the checks live here, with PyTorch's messages naming these ops; the
// gradients (first and second) are those of the ops composed. Modules wrapping these: nn/conv.h.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "tensorgrad/ops/creation.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/prim/prim.h"

namespace tg {

namespace {

/// The one element of a 1-D pooling size; ShapeError naming op and what otherwise.
int64_t one(const char* op, const char* what, const Shape& v) {
  TG_CHECK(v.size() == 1, ShapeError, op, ": ", what, " must be an int or a list of one int, but got ", v.size(),
           " elements");
  return v[0];
}

/// ShapeError unless x is (N, C, L) or (C, L); DTypeError unless it is floating.
void check_1d(const char* op, const Tensor& x) {
  TG_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError, op, ": Expected 2D or 3D input tensor, but got ",
           shape_str(x.shape()));
  prim::check_floating(op, x.data());
}

/// PyTorch's pooling output size (pooling_output_shape), as ops/conv.cpp's pool_args computes it:
/// floor((size + 2 pad - dilation (kernel - 1) - 1) / step) + 1, rounded up with ceil_mode unless the
/// last window would then start past the input and its left padding.
int64_t pool_out(int64_t size, int64_t kernel, int64_t pad, int64_t step, int64_t dil, bool ceil_mode) {
  const int64_t num = size + 2 * pad - dil * (kernel - 1) - 1 + (ceil_mode ? step - 1 : 0);
  int64_t o = (num >= 0 ? num / step : -((-num + step - 1) / step)) + 1;
  if (ceil_mode && (o - 1) * step >= size + pad) --o;
  return o;
}

/// The 1-D checks of max_pool1d (with dilation) and avg_pool1d (dilation 1): PyTorch's, in its order.
/// Returns {kernel, stride, padding, dilation}.
std::vector<int64_t> pool1d_args(const char* op, const Tensor& x, const Shape& kernel_size, const Shape& stride,
                                 const Shape& padding, const Shape& dilation, bool ceil_mode) {
  check_1d(op, x);
  const int64_t k = one(op, "kernel_size", kernel_size), s = stride.empty() ? k : one(op, "stride", stride),
                p = one(op, "padding", padding), d = one(op, "dilation", dilation);
  TG_CHECK(k > 0, ShapeError, op, ": kernel_size must be greater than zero, but got ", k);
  TG_CHECK(s > 0, ShapeError, op, ": stride must be greater than zero, but got ", s);
  TG_CHECK(p >= 0, ShapeError, op, ": padding must be non-negative, but got ", p);
  TG_CHECK(p <= k / 2, ShapeError, op, ": padding should be at most half of kernel size, but got padding=", p,
           " and kernel_size=", k);
  TG_CHECK(d > 0, ShapeError, op, ": dilation must be greater than zero, but got ", d);
  const int64_t o = pool_out(x.shape().back(), k, p, s, d, ceil_mode);
  TG_CHECK(o > 0, ShapeError, op, ": Invalid computed output size: ", o, " (input of size ", shape_str(x.shape()),
           ", kernel_size ", k, ", padding ", p, ", dilation ", d, ")");
  return {k, s, p, d};
}

/// The output size {OD, OH, OW} (three), {OH, OW} (two) or {OL} (one) of an adaptive pooling, each
/// positive, one number standing for all; ShapeError naming op.
std::vector<int64_t> adaptive_size(const char* op, const Shape& output_size, std::size_t spatial) {
  const bool ok = output_size.size() == spatial || output_size.size() == 1;
  TG_CHECK(ok, ShapeError, op, ": output_size must have ", spatial == 1 ? "1 element" : spatial == 2 ? "1 or 2 elements" : "1 or 3 elements",
           ", got ", output_size.size());
  std::vector<int64_t> o(output_size.begin(), output_size.end());
  o.resize(spatial, o[0]);
  for (int64_t v : o) TG_CHECK(v > 0, ShapeError, op, ": elements of output_size must be positive, got ", shape_str(o));
  return o;
}

/// ShapeError unless every non-batch dim of x (C and the spatial ones) is non-empty, PyTorch's message.
void check_not_empty(const char* op, const Tensor& x, int64_t spatial) {
  for (int64_t d = x.dim() - spatial - 1; d < x.dim(); ++d)
    TG_CHECK(x.shape()[d] > 0, ShapeError, op,
             ": Expected input to have non-zero size for non-batch dimensions, but input has sizes ",
             shape_str(x.shape()), " with dimension ", d, " being empty");
}

/// x with dim (of size n) reduced to `out` maxima over the adaptive windows [floor(i n / out),
/// ceil((i + 1) n / out)). When out divides n the windows are the n / out blocks of a reshape. Otherwise
/// index_select gathers each window as K rows (K the widest window; a narrower one repeats its last row,
/// and index_select's gradient adds the shares of those copies back into that one element), and amax
/// reduces them. Cost: one gather of out K <= n + out slices, then one reduction.
Tensor adaptive_max_along(const Tensor& x, int64_t dim, int64_t out) {
  const int64_t n = x.shape()[static_cast<std::size_t>(dim)];
  Shape s = x.shape();
  if (n % out == 0) {
    s[static_cast<std::size_t>(dim)] = out;
    s.insert(s.begin() + dim + 1, n / out);
    return amax(reshape(x, s), {dim + 1});
  }
  int64_t K = 0;
  for (int64_t i = 0; i < out; ++i) K = std::max(K, ((i + 1) * n + out - 1) / out - i * n / out);
  std::vector<int64_t> rows;
  rows.reserve(static_cast<std::size_t>(out * K));
  for (int64_t i = 0; i < out; ++i) {
    const int64_t start = i * n / out, end = ((i + 1) * n + out - 1) / out;
    for (int64_t k = 0; k < K; ++k) rows.push_back(start + std::min(k, end - start - 1));
  }
  const Tensor index = from_vector(rows, {out * K}, TensorOptions().device(x.device()));
  s[static_cast<std::size_t>(dim)] = out;
  s.insert(s.begin() + dim + 1, K);
  return amax(reshape(index_select(x, dim, index), s), {dim + 1});
}

/// adaptive_max_pool2d (spatial 2) and adaptive_max_pool3d (spatial 3) after PyTorch's checks naming
/// op: input (N, C, *spatial) or (C, *spatial). Equal windows that tile the input go to the max pool
/// of that rank (`tiled`, given the window), which gives each window's gradient to one maximum, as
/// PyTorch does; otherwise the maxima are taken one dim at a time (the maximum over a box is the
/// maximum over its last dim of the maxima over the dims before it).
Tensor adaptive_max_nd(const char* op, const Tensor& input, const Shape& output_size, std::size_t spatial,
                       const std::function<Tensor(const Tensor&, IntArrayRef)>& tiled) {
  const auto rank = static_cast<int64_t>(spatial);
  TG_CHECK(input.dim() == rank + 1 || input.dim() == rank + 2, ShapeError, op, ": Expected ", rank + 1, "D or ",
           rank + 2, "D tensor, but got ", shape_str(input.shape()));
  prim::check_floating(op, input.data());
  const std::vector<int64_t> o = adaptive_size(op, output_size, spatial);
  check_not_empty(op, input, rank);
  const int64_t first = input.dim() - rank;
  Shape window;
  for (std::size_t i = 0; i < spatial; ++i) {
    const int64_t n = input.shape()[static_cast<std::size_t>(first) + i];
    if (n % o[i] != 0) break;
    window.push_back(n / o[i]);
  }
  if (window.size() == spatial) return tiled(input, window);
  Tensor y = input;
  for (std::size_t i = 0; i < spatial; ++i) y = adaptive_max_along(y, first + static_cast<int64_t>(i), o[i]);
  return y;
}

}  // namespace

Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  const std::vector<int64_t> a = pool1d_args("max_pool1d", input, kernel_size, stride, padding, dilation, ceil_mode);
  // (N, C, L) as (N, C, 1, L), (C, L) as the unbatched (C, 1, L)
  return squeeze(max_pool2d(unsqueeze(input, -2), {1, a[0]}, {1, a[1]}, {0, a[2]}, {1, a[3]}, ceil_mode), -2);
}

Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad) {
  const std::vector<int64_t> a = pool1d_args("avg_pool1d", input, kernel_size, stride, padding, {1}, ceil_mode);
  return squeeze(avg_pool2d(unsqueeze(input, -2), {1, a[0]}, {1, a[1]}, {0, a[2]}, count_include_pad, ceil_mode), -2);
}

Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size) {
  const char* op = "adaptive_avg_pool1d";
  check_1d(op, input);
  const std::vector<int64_t> o = adaptive_size(op, output_size, 1);
  check_not_empty(op, input, 1);
  return squeeze(adaptive_avg_pool2d(unsqueeze(input, -2), {1, o[0]}), -2);
}

Tensor adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
  return adaptive_max_nd("adaptive_max_pool2d", input, output_size, 2,
                         [](const Tensor& x, IntArrayRef window) { return max_pool2d(x, window); });
}

Tensor adaptive_max_pool3d(const Tensor& input, IntArrayRef output_size) {
  return adaptive_max_nd("adaptive_max_pool3d", input, output_size, 3,
                         [](const Tensor& x, IntArrayRef window) { return max_pool3d(x, window); });
}

Tensor adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size) {
  const char* op = "adaptive_max_pool1d";
  check_1d(op, input);
  const std::vector<int64_t> o = adaptive_size(op, output_size, 1);
  check_not_empty(op, input, 1);
  const int64_t L = input.shape().back();
  if (L % o[0] == 0) return squeeze(max_pool2d(unsqueeze(input, -2), {1, L / o[0]}), -2);
  return adaptive_max_along(input, input.dim() - 1, o[0]);
}

}  // namespace tg
