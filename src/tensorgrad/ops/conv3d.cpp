// ops/conv3d.cpp: the 3-D convolutions and poolings (conv3d, conv_transpose3d, max_pool3d, avg_pool3d,
// adaptive_avg_pool3d), composed of the 2-D ops of ops/conv.cpp and of views, pad and stack. Only the
// checks live here, with PyTorch's messages naming these ops; the gradients (first and second, on
// every backend) are those of the ops composed (Note [3-D convolution as a composition]).
// Modules wrapping these: nn/conv.h.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/ops/conv_checks.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/prim/prim.h"

namespace tg {

// Note [3-D convolution as a composition]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// There is no 3-D kernel: conv3d folds the kernel's depth into conv2d's channels. After zero padding
// the depth, the KD strided depth slices x[:, :, k dil : k dil + stride (OD - 1) + 1 : stride] (views,
// one per kernel depth index k) are stacked next to the channels and the output depths moved into
// the batch, giving (N OD, C KD, H, W); the weight (O, C / groups, KD, KH, KW) read as (O, C / groups
// KD, KH, KW) keeps each group's channels together, so one conv2d with the same groups computes
// every output depth. Its cost is the 3-D im2col's: one GEMM of the same size, plus one copy of the
// input KD / stride times over (the stacked slices), which is what an im2col over depth would hold.
// Measured on the CPU backend, x (2, 16, 16, 32, 32) and w (32, 16, 3, 3, 3) with padding 1: the
// forward takes as long as the one conv2d of the same GEMM alone (about 11 ms each, the slices' copy
// lost in the noise), and PyTorch 2.15's own conv3d kernel about 22 ms on the same machine.
// conv_transpose3d is the adjoint of that: one conv_transpose2d of (N D, Cin, H, W) with the weight
// read as (Cin, Cout / groups KD, KH, KW) gives each input depth's contribution to each kernel depth
// k; those are spread by the stride along depth (zeros between), shifted by k dil, summed over k
// (KD additions of an output-sized tensor) and cropped by the padding. The poolings are separable:
// a 3-D window is the product of its three intervals, so its maximum is the maximum over depth of
// the (H, W) window maxima, and its mean (both divisors, count_include_pad or not, and the clipped
// windows of ceil_mode, are products of one factor per dim) the mean over depth of the (H, W) means:
// the 2-D pool over (H, W), then the same 2-D pool over (D, 1). All of it is differentiable twice
// through the 2-D ops' rules and runs on both backends.

namespace {

/// {n} -> (n, n, n); {d, h, w} as given; ShapeError naming op and what otherwise.
std::vector<int64_t> triple(const char* op, const char* what, const Shape& v) {
  TG_CHECK(v.size() == 1 || v.size() == 3, ShapeError, op, ": ", what, " must have 1 or 3 elements, got ", v.size());
  return v.size() == 1 ? std::vector<int64_t>{v[0], v[0], v[0]} : std::vector<int64_t>(v.begin(), v.end());
}

/// "(d x h x w)", as PyTorch prints 3-D sizes in its convolution messages.
std::string sizes3(int64_t a, int64_t b, int64_t c) {
  std::ostringstream os;
  os << "(" << a << " x " << b << " x " << c << ")";
  return os.str();
}
std::string sizes3(const std::vector<int64_t>& v) { return sizes3(v[0], v[1], v[2]); }

/// x (N, C, *) as (N, *, ...) with dims 1 and 2 swapped, then merged: (N, C, D, ...) -> (N D, C, ...).
Tensor depth_into_batch(const Tensor& x) {
  Shape s = x.shape();
  Shape merged{s[0] * s[2], s[1]};
  merged.insert(merged.end(), s.begin() + 3, s.end());
  return reshape(transpose(x, 1, 2), merged);
}

/// y (N D, C, ...) back to (N, C, D, ...), contiguous.
Tensor batch_into_depth(const Tensor& y, int64_t N, int64_t D) {
  Shape s = y.shape();
  Shape split{N, D};
  split.insert(split.end(), s.begin() + 1, s.end());
  return contiguous(transpose(reshape(y, split), 1, 2));
}

}  // namespace

Tensor conv3d(const Tensor& input_in, const Tensor& weight_in, const Tensor& bias_in, IntArrayRef stride_in,
              IntArrayRef padding_in, IntArrayRef dilation_in, int64_t groups) {
  const char* op = "conv3d";
  // the lower precision under autocast (Note [Autocast op lists]), as conv2d, before the copies below
  using amp::detail::AutocastOp;
  const Tensor input = amp::detail::cast(AutocastOp::Conv2d, input_in),
               weight = amp::detail::cast(AutocastOp::Conv2d, weight_in),
               bias = amp::detail::cast(AutocastOp::Conv2d, bias_in);
  TG_CHECK(input.dim() == 4 || input.dim() == 5, ShapeError, op,
           ": Expected 4D (unbatched) or 5D (batched) input to conv3d, but got input of size: ", shape_str(input.shape()));
  prim::check_floating(op, input.data());
  const bool batched = input.dim() == 5;
  const Tensor x = batched ? input : unsqueeze(input, 0);
  const Shape& xs = x.shape();
  const Shape& w = weight.shape();
  TG_CHECK(w.size() == 5, ShapeError, op,
           ": expected weight of 5 dims (out_channels, in_channels / groups, kD, kH, kW), got weight of size ",
           shape_str(w));
  const std::vector<int64_t> stride = triple(op, "stride", stride_in), padding = triple(op, "padding", padding_in),
                             dilation = triple(op, "dilation", dilation_in);
  detail::check_conv_params(op, false, xs, w, bias, stride.data(), padding.data(), dilation.data(), 3, groups);
  std::vector<int64_t> padded(3), effective(3);
  bool fits = true;
  for (int i = 0; i < 3; ++i) {
    padded[i] = xs[2 + i] + 2 * padding[i];
    effective[i] = dilation[i] * (w[2 + i] - 1) + 1;
    fits = fits && w[2 + i] > 0 && effective[i] <= padded[i];
  }
  TG_CHECK(fits, ShapeError, op, ": Calculated padded input size per channel: ", sizes3(padded), ". Kernel size: ",
           sizes3(effective), ". Kernel size can't be greater than actual input size (input ", shape_str(xs),
           ", weight ", shape_str(w), ")");
  const int64_t N = xs[0], KD = w[2], OD = (padded[0] - effective[0]) / stride[0] + 1;
  // Note [3-D convolution as a composition]: the KD strided depth slices, stacked after the channels
  const Tensor xp = padding[0] > 0 ? pad(x, {0, 0, 0, 0, padding[0], padding[0]}) : x;
  std::vector<Tensor> slices;
  slices.reserve(static_cast<std::size_t>(KD));
  for (int64_t k = 0; k < KD; ++k) {
    const int64_t start = k * dilation[0];
    slices.push_back(index(xp, {Slice(), Slice(), Slice(start, start + stride[0] * (OD - 1) + 1, stride[0])}));
  }
  const Tensor stacked = stack(slices, 2);   // (N, C, KD, OD, H, W)
  const Tensor x2 = reshape(permute(stacked, {0, 3, 1, 2, 4, 5}), {N * OD, xs[1] * KD, xs[3], xs[4]});
  const Tensor w2 = reshape(weight, {w[0], w[1] * KD, w[3], w[4]});
  const Tensor y2 = conv2d(x2, w2, bias, {stride[1], stride[2]}, {padding[1], padding[2]}, {dilation[1], dilation[2]},
                           groups);   // (N OD, O, OH, OW)
  const Tensor y = batch_into_depth(y2, N, OD);
  return batched ? y : squeeze(y, 0);
}

Tensor conv_transpose3d(const Tensor& input_in, const Tensor& weight_in, const Tensor& bias_in, IntArrayRef stride_in,
                        IntArrayRef padding_in, IntArrayRef output_padding_in, int64_t groups,
                        IntArrayRef dilation_in) {
  const char* op = "conv_transpose3d";
  using amp::detail::AutocastOp;
  const Tensor input = amp::detail::cast(AutocastOp::ConvTranspose2d, input_in),
               weight = amp::detail::cast(AutocastOp::ConvTranspose2d, weight_in),
               bias = amp::detail::cast(AutocastOp::ConvTranspose2d, bias_in);
  TG_CHECK(input.dim() == 4 || input.dim() == 5, ShapeError, op,
           ": Expected 4D (unbatched) or 5D (batched) input to conv_transpose3d, but got input of size: ",
           shape_str(input.shape()));
  prim::check_floating(op, input.data());
  const bool batched = input.dim() == 5;
  const Tensor x = batched ? input : unsqueeze(input, 0);
  const Shape& xs = x.shape();
  const Shape& w = weight.shape();
  TG_CHECK(w.size() == 5, ShapeError, op,
           ": expected weight of 5 dims (in_channels, out_channels / groups, kD, kH, kW), got weight of size ",
           shape_str(w));
  const std::vector<int64_t> stride = triple(op, "stride", stride_in), padding = triple(op, "padding", padding_in),
                             output_padding = triple(op, "output_padding", output_padding_in),
                             dilation = triple(op, "dilation", dilation_in);
  detail::check_conv_params(op, true, xs, w, bias, stride.data(), padding.data(), dilation.data(), 3, groups);
  bool op_ok = true;
  for (int i = 0; i < 3; ++i)
    op_ok = op_ok && output_padding[i] >= 0 && (output_padding[i] < stride[i] || output_padding[i] < dilation[i]);
  TG_CHECK(op_ok, ShapeError, op, ": output padding must be smaller than either stride or dilation, but got output_padding ",
           sizes3(output_padding), ", stride ", sizes3(stride), " and dilation ", sizes3(dilation));
  const int64_t out_channels = w[1] * groups;
  // The output size: (in - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1.
  std::vector<int64_t> out(3);
  bool positive = true;
  for (int i = 0; i < 3; ++i) {
    out[i] = (xs[2 + i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (w[2 + i] - 1) + output_padding[i] + 1;
    positive = positive && out[i] > 0 && w[2 + i] > 0;
  }
  TG_CHECK(positive, ShapeError, op, ": Given input size per channel: ", sizes3(xs[2], xs[3], xs[4]),
           ". Calculated output size per channel: ", sizes3(out), ". Output size is too small");
  // Note [3-D convolution as a composition]: each input depth's contribution to every kernel depth
  const int64_t N = xs[0], D = xs[2], KD = w[2];
  const Tensor z = conv_transpose2d(depth_into_batch(x), reshape(weight, {w[0], w[1] * KD, w[3], w[4]}), Tensor(),
                                    {stride[1], stride[2]}, {padding[1], padding[2]},
                                    {output_padding[1], output_padding[2]}, groups, {dilation[1], dilation[2]});
  const int64_t OH = z.shape()[2], OW = z.shape()[3];
  // (N D, Cout KD, OH, OW) -> (N, Cout, KD, D, OH, OW)
  const Tensor zz = permute(reshape(z, {N, D, out_channels, KD, OH, OW}), {0, 2, 3, 1, 4, 5});
  // Input depth d lands on full depth d stride + k dilation; the full depth (before the padding's crop)
  const int64_t spread = (D - 1) * stride[0] + 1, full = spread + dilation[0] * (KD - 1);
  Tensor sum;
  for (int64_t k = 0; k < KD; ++k) {
    Tensor t = select(zz, 2, k);   // (N, Cout, D, OH, OW)
    if (stride[0] > 1) {          // stride - 1 zero depths after each: (N, Cout, D, stride, OH, OW), then cut
      t = pad(unsqueeze(t, 3), {0, 0, 0, 0, 0, stride[0] - 1});
      t = narrow(reshape(t, {N, out_channels, D * stride[0], OH, OW}), 2, 0, spread);
    }
    const int64_t before = k * dilation[0];
    t = pad(t, {0, 0, 0, 0, before, full - spread - before});
    sum = sum.defined() ? sum + t : t;
  }
  // crop the padding; output_padding adds depths at the end (zero where no input reaches)
  Tensor y = pad(sum, {0, 0, 0, 0, -padding[0], output_padding[0] - padding[0]});
  if (bias.defined()) y = y + reshape(bias, {1, out_channels, 1, 1, 1});
  return batched ? y : squeeze(y, 0);
}

namespace {

/// PyTorch's pooling output size (pooling_output_shape), as ops/conv.cpp's pool_args computes it.
int64_t pool_out(int64_t size, int64_t kernel, int64_t pad, int64_t step, int64_t dil, bool ceil_mode) {
  const int64_t num = size + 2 * pad - dil * (kernel - 1) - 1 + (ceil_mode ? step - 1 : 0);
  int64_t o = (num >= 0 ? num / step : -((-num + step - 1) / step)) + 1;
  if (ceil_mode && (o - 1) * step >= size + pad) --o;
  return o;
}

/// The sizes of a 3-D pooling after PyTorch's checks, in its order: {kernel, stride, padding, dilation},
/// each of three.
std::vector<std::vector<int64_t>> pool3d_args(const char* op, const Tensor& x, const Shape& kernel_size,
                                              const Shape& stride_in, const Shape& padding_in,
                                              const Shape& dilation_in, bool ceil_mode) {
  TG_CHECK(x.dim() == 4 || x.dim() == 5, ShapeError, op, ": Expected 4D or 5D (batch mode) tensor for input, got ",
           shape_str(x.shape()));
  prim::check_floating(op, x.data());
  const std::vector<int64_t> k = triple(op, "kernel_size", kernel_size),
                             s = stride_in.empty() ? k : triple(op, "stride", stride_in),
                             p = triple(op, "padding", padding_in), d = triple(op, "dilation", dilation_in);
  TG_CHECK(k[0] > 0 && k[1] > 0 && k[2] > 0, ShapeError, op, ": kernel_size must be greater than zero, but got ",
           sizes3(k));
  TG_CHECK(s[0] > 0 && s[1] > 0 && s[2] > 0, ShapeError, op, ": stride must be greater than zero, but got ", sizes3(s));
  TG_CHECK(d[0] > 0 && d[1] > 0 && d[2] > 0, ShapeError, op, ": dilation must be greater than zero, but got ",
           sizes3(d));
  for (int i = 0; i < 3; ++i)
    TG_CHECK(p[i] >= 0 && p[i] <= k[i] / 2, ShapeError, op,
             ": pad should be at most half of effective kernel size, but got pad=", sizes3(p),
             ", kernel_size=", sizes3(k), " and dilation=", sizes3(d));
  const Shape& xs = x.shape();
  const std::size_t first = xs.size() - 3;
  std::vector<int64_t> o(3);
  for (std::size_t i = 0; i < 3; ++i) o[i] = pool_out(xs[first + i], k[i], p[i], s[i], d[i], ceil_mode);
  TG_CHECK(o[0] >= 1 && o[1] >= 1 && o[2] >= 1, ShapeError, op, ": Given input size: (", xs[first - 1], "x",
           xs[first], "x", xs[first + 1], "x", xs[first + 2], "). Calculated output size: (", xs[first - 1], "x",
           std::max<int64_t>(0, o[0]), "x", std::max<int64_t>(0, o[1]), "x", std::max<int64_t>(0, o[2]),
           "). Output size is too small (kernel_size ", sizes3(k), ", padding ", sizes3(p), ", dilation ", sizes3(d), ")");
  return {k, s, p, d};
}

/// x (N, C, D, H, W) as (N, C D, H, W) for a 2-D pool over (H, W).
Tensor hw_planes(const Tensor& x) {
  const Shape& s = x.shape();
  return reshape(x, {s[0], s[1] * s[2], s[3], s[4]});
}

/// y (N, C D, OH, OW) as (N, C, D, OH OW) for a 2-D pool over (D, 1).
Tensor depth_planes(const Tensor& y, int64_t C, int64_t D) {
  const Shape& s = y.shape();
  return reshape(y, {s[0], C, D, s[2] * s[3]});
}

}  // namespace

Tensor max_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  IntArrayRef dilation, bool ceil_mode) {
  const auto a = pool3d_args("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode);
  const auto &k = a[0], &s = a[1], &p = a[2], &d = a[3];
  const bool batched = input.dim() == 5;
  const Tensor x = batched ? input : unsqueeze(input, 0);
  const int64_t C = x.shape()[1], D = x.shape()[2];
  // Note [3-D convolution as a composition]: the (H, W) maxima, then their maxima over depth
  const Tensor hw = max_pool2d(hw_planes(x), {k[1], k[2]}, {s[1], s[2]}, {p[1], p[2]}, {d[1], d[2]}, ceil_mode);
  const int64_t OH = hw.shape()[2], OW = hw.shape()[3];
  const Tensor y = max_pool2d(depth_planes(hw, C, D), {k[0], 1}, {s[0], 1}, {p[0], 0}, {d[0], 1}, ceil_mode);
  const Tensor out = reshape(y, {x.shape()[0], C, y.shape()[2], OH, OW});
  return batched ? out : squeeze(out, 0);
}

Tensor avg_pool3d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding,
                  bool ceil_mode, bool count_include_pad) {
  const auto a = pool3d_args("avg_pool3d", input, kernel_size, stride, padding, {1}, ceil_mode);
  const auto &k = a[0], &s = a[1], &p = a[2];
  const bool batched = input.dim() == 5;
  const Tensor x = batched ? input : unsqueeze(input, 0);
  const int64_t C = x.shape()[1], D = x.shape()[2];
  // Note [3-D convolution as a composition]: the (H, W) means, then their means over depth
  const Tensor hw = avg_pool2d(hw_planes(x), {k[1], k[2]}, {s[1], s[2]}, {p[1], p[2]}, count_include_pad, ceil_mode);
  const int64_t OH = hw.shape()[2], OW = hw.shape()[3];
  const Tensor y = avg_pool2d(depth_planes(hw, C, D), {k[0], 1}, {s[0], 1}, {p[0], 0}, count_include_pad, ceil_mode);
  const Tensor out = reshape(y, {x.shape()[0], C, y.shape()[2], OH, OW});
  return batched ? out : squeeze(out, 0);
}

Tensor adaptive_avg_pool3d(const Tensor& input, IntArrayRef output_size) {
  const char* op = "adaptive_avg_pool3d";
  TG_CHECK(input.dim() == 4 || input.dim() == 5, ShapeError, op, ": Expected 4D or 5D tensor, but got ",
           shape_str(input.shape()));
  prim::check_floating(op, input.data());
  const std::vector<int64_t> o = triple(op, "output_size", output_size);
  TG_CHECK(o[0] > 0 && o[1] > 0 && o[2] > 0, ShapeError, op, ": elements of output_size must be positive, got ",
           sizes3(o));
  for (int64_t dim = input.dim() - 4; dim < input.dim(); ++dim)
    TG_CHECK(input.shape()[static_cast<std::size_t>(dim)] > 0, ShapeError, op,
             ": Expected input to have non-zero size for non-batch dimensions, but input has sizes ",
             shape_str(input.shape()), " with dimension ", dim, " being empty");
  const bool batched = input.dim() == 5;
  const Tensor x = batched ? input : unsqueeze(input, 0);
  const int64_t C = x.shape()[1], D = x.shape()[2];
  // separable: the (H, W) means, then their means over depth (windows [i, i + 1) along OH OW)
  const Tensor hw = adaptive_avg_pool2d(hw_planes(x), {o[1], o[2]});
  const Tensor y = adaptive_avg_pool2d(depth_planes(hw, C, D), {o[0], o[1] * o[2]});
  const Tensor out = reshape(y, {x.shape()[0], C, o[0], o[1], o[2]});
  return batched ? out : squeeze(out, 0);
}

}  // namespace tg
