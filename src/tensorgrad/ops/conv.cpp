// ops/conv.cpp: conv1d, conv2d, conv_transpose1d, conv_transpose2d, max_pool2d, avg_pool2d and
// adaptive_avg_pool2d: the geometry checks (ranks, channels, groups, kernel against the padded input)
// with PyTorch's messages, then the forward through prim/conv.cpp and the backward right below it.
// Kernels: Backend::conv2d and the pooling methods (backend/cpu/conv.cpp, backend/cuda/conv.cu). The
// 1-D and adaptive max poolings composed of these are in ops/pooling.cpp. Modules: nn/conv.h.
#include <sstream>
#include <string>

#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/ops/conv_checks.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/ops/rules.h"

namespace tg {

void detail::check_conv_params(const char* op, bool transposed, const Shape& x, const Shape& w, const Tensor& bias,
                               const int64_t* stride, const int64_t* padding, const int64_t* dilation, int n,
                               int64_t groups) {
  TG_CHECK(groups > 0, ShapeError, op, ": non-positive groups is not supported (groups=", groups, ")");
  for (int i = 0; i < n; ++i) {
    TG_CHECK(stride[i] > 0, ShapeError, op, ": non-positive stride is not supported");
    TG_CHECK(padding[i] >= 0, ShapeError, op, ": negative padding is not supported");
    TG_CHECK(dilation[i] > 0, ShapeError, op, ": dilation should be greater than zero");
  }
  TG_CHECK(w[0] % groups == 0 && w[0] > 0, ShapeError, op, ": Given groups=", groups,
           ", expected weight to be divisible by ", groups, " at dimension 0, but got weight of size ", shape_str(w),
           " instead");
  // a transposed convolution's weight is (in_channels, out_channels / groups, ...)
  const int64_t in_channels = transposed ? w[0] : w[1] * groups, out_channels = transposed ? w[1] * groups : w[0];
  TG_CHECK(x[1] == in_channels, ShapeError, op, ": Given ", transposed ? "transposed=1" : "groups=" + std::to_string(groups),
           ", weight of size ", shape_str(w), ", expected input", shape_str(x), " to have ", in_channels,
           " channels, but got ", x[1], " channels instead");
  if (bias.defined())
    TG_CHECK(bias.shape() == Shape{out_channels}, ShapeError, op, ": Given ", transposed ? "transposed=1, " : "",
             "weight of size ", shape_str(w), ", expected bias to be 1-dimensional with ", out_channels,
             " elements, but got bias of size ", shape_str(bias.shape()), " instead");
}

namespace {

/// {n} -> (n, n), {h, w} -> (h, w); ShapeError naming op and what otherwise.
std::pair<int64_t, int64_t> pair_of(const char* op, const char* what, const std::vector<int64_t>& v) {
  TG_CHECK(v.size() == 1 || v.size() == 2, ShapeError, op, ": ", what, " must have 1 or 2 elements, got ", v.size());
  return {v[0], v.size() == 2 ? v[1] : v[0]};
}

std::string sizes2(int64_t a, int64_t b) {
  std::ostringstream os;
  os << "(" << a << " x " << b << ")";
  return os.str();
}

/// The Conv2dArgs of op ("conv1d" or "conv2d") for x (N, C, *spatial), weight (O, C / groups,
/// *kernel), with spatial dims of 1 (H = 1) or 2, after PyTorch's checks.
Conv2dArgs conv_args(const char* op, int spatial, const Shape& x, const Shape& w, const Tensor& bias,
                     std::pair<int64_t, int64_t> stride, std::pair<int64_t, int64_t> padding,
                     std::pair<int64_t, int64_t> dilation, int64_t groups) {
  const int64_t rank = spatial + 2;
  TG_CHECK(static_cast<int64_t>(w.size()) == rank, ShapeError, op, ": expected weight of ", rank,
           " dims (out_channels, in_channels / groups, ", spatial == 2 ? "kH, kW" : "kW", "), got weight of size ",
           shape_str(w));
  const int64_t strides[2] = {stride.first, stride.second}, paddings[2] = {padding.first, padding.second},
                dilations[2] = {dilation.first, dilation.second};
  detail::check_conv_params(op, false, x, w, bias, strides, paddings, dilations, 2, groups);
  Conv2dArgs a;
  a.N = x[0];
  a.C = x[1];
  a.H = spatial == 2 ? x[2] : 1;
  a.W = x[rank - 1];
  a.O = w[0];
  a.KH = spatial == 2 ? w[2] : 1;
  a.KW = w[rank - 1];
  a.stride_h = stride.first;
  a.stride_w = stride.second;
  a.pad_h = padding.first;
  a.pad_w = padding.second;
  a.dil_h = dilation.first;
  a.dil_w = dilation.second;
  a.groups = groups;
  const int64_t ph = a.H + 2 * a.pad_h, pw = a.W + 2 * a.pad_w;
  const int64_t eh = a.dil_h * (a.KH - 1) + 1, ew = a.dil_w * (a.KW - 1) + 1;   // effective kernel
  TG_CHECK(a.KH > 0 && a.KW > 0 && eh <= ph && ew <= pw, ShapeError, op, ": Calculated padded input size per channel: ",
           spatial == 2 ? sizes2(ph, pw) : "(" + std::to_string(pw) + ")", ". Kernel size: ",
           spatial == 2 ? sizes2(eh, ew) : "(" + std::to_string(ew) + ")",
           ". Kernel size can't be greater than actual input size (input ", shape_str(x), ", weight ", shape_str(w), ")");
  a.OH = (ph - eh) / a.stride_h + 1;
  a.OW = (pw - ew) / a.stride_w + 1;
  return a;
}

Tensor conv2d_node(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dArgs& args);

// Note [Convolution gradients as ops]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Under create_graph conv2d's two gradients are ops of their own, each bilinear: dx = Gx(dy, W) and
// dW = Gw(dy, x), the kernels of prim::conv2d_backward. Their own gradients come from the identity
// <u, Gx(dy, W)> = <conv2d(u, W), dy> = <Gw(dy, u), W> (and the same for Gw with x and W swapped), so
// the gradient of Gx with respect to dy is a convolution and with respect to W is a Gw, and the
// gradient of Gw with respect to dy is a convolution and with respect to x is a Gx: conv2d, Gx and Gw
// are closed under differentiation, to any order, with no kernel beyond the first-order ones.

/// Gx(dy, W): dL/dx of conv2d for dy = dL/d(output), differentiable (Note [Convolution gradients as ops]).
Tensor conv2d_input_grad(const Tensor& dy, const Tensor& weight, const Conv2dArgs& args);

/// Gw(dy, x): dL/dW of conv2d for dy = dL/d(output), differentiable (Note [Convolution gradients as ops]).
Tensor conv2d_weight_grad(const Tensor& dy, const Tensor& x, const Conv2dArgs& args) {
  RawTensor dw = prim::conv2d_backward(x.data(), RawTensor(), dy.data(), args, false, true, false).dweight;
  const bool need = any_requires_grad({dy, x});
  SavedTensor dy_saved = need ? SavedTensor(dy) : SavedTensor(), x_saved = need ? SavedTensor(x) : SavedTensor();
  return record("conv2d_weight_grad", std::move(dw), {dy, x}, [dy_saved, x_saved, args](const Tensor& v, VarGrads& g) {
    if (g.need(0)) g.set(0, conv2d_node(g.input(1, x_saved), v, Tensor(), args));     // <v, Gw(dy, x)> = <conv2d(x, v), dy>
    if (g.need(1)) g.set(1, conv2d_input_grad(g.input(0, dy_saved), v, args));         //                = <Gx(dy, v), x>
  });
}

Tensor conv2d_input_grad(const Tensor& dy, const Tensor& weight, const Conv2dArgs& args) {
  RawTensor dx = prim::conv2d_backward(RawTensor(), weight.data(), dy.data(), args, true, false, false).dx;
  const bool need = any_requires_grad({dy, weight});
  SavedTensor dy_saved = need ? SavedTensor(dy) : SavedTensor(), w_saved = need ? SavedTensor(weight) : SavedTensor();
  return record("conv2d_input_grad", std::move(dx), {dy, weight}, [dy_saved, w_saved, args](const Tensor& u, VarGrads& g) {
    if (g.need(0)) g.set(0, conv2d_node(u, g.input(1, w_saved), Tensor(), args));     // <u, Gx(dy, W)> = <conv2d(u, W), dy>
    if (g.need(1)) g.set(1, conv2d_weight_grad(g.input(0, dy_saved), u, args));        //                = <Gw(dy, u), W>
  });
}

/// The recorded conv2d of x (N, C, H, W) and weight (O, C / groups, KH, KW) as args describes.
Tensor conv2d_node(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dArgs& args) {
  RawTensor out = prim::conv2d(x.data(), weight.data(), bias.defined() ? bias.data() : RawTensor(), args);
  const bool grad_mode = GradMode::is_enabled();
  SavedTensor x_saved = grad_mode && weight.requires_grad() ? SavedTensor(x) : SavedTensor();
  SavedTensor w_saved = grad_mode && x.requires_grad() ? SavedTensor(weight) : SavedTensor();
  std::vector<Tensor> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return record("conv2d", out, inputs, [x_saved, w_saved, args](const auto& grad, auto& g) {
    // x is read only for dweight and weight only for dx (each saved only then).
    // dx = sum over taps of W^T dy (col2im; with stride 1 on the CPU a convolution of dy with the
    // flipped weight);  dW = dy . im2col(x)^T;  db = sum of dy over (N, OH, OW)
    if constexpr (first_order_v<decltype(g)>) {   // the three in one call
      prim::Conv2dGrads r = prim::conv2d_backward(x_saved.get(), w_saved.get(), grad, args, g.need(0), g.need(1), g.size() > 2 && g.need(2));
      if (g.need(0)) g.set(0, r.dx);
      if (g.need(1)) g.set(1, r.dweight);
      if (g.size() > 2 && g.need(2)) g.set(2, r.dbias);
    } else {   // Note [Convolution gradients as ops]
      if (g.need(0)) g.set(0, conv2d_input_grad(grad, g.input(1, w_saved), args));
      if (g.need(1)) g.set(1, conv2d_weight_grad(grad, g.input(0, x_saved), args));
      if (g.size() > 2 && g.need(2)) g.set(2, grad.sum_to_size({1, args.O, 1, 1}).reshape({args.O}));
    }
  });
}

}  // namespace

Tensor conv2d(const Tensor& input_in, const Tensor& weight_in, const Tensor& bias_in,
                IntArrayRef stride, IntArrayRef padding,
                IntArrayRef dilation, int64_t groups) {
  // the lower precision under autocast (Note [Autocast op lists]); a parameter's cast is cached
  using amp::detail::AutocastOp;
  const Tensor input = amp::detail::cast(AutocastOp::Conv2d, input_in),
               weight = amp::detail::cast(AutocastOp::Conv2d, weight_in),
               bias = amp::detail::cast(AutocastOp::Conv2d, bias_in);
  TG_CHECK(input.dim() == 3 || input.dim() == 4, ShapeError,
           "conv2d: Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: ",
           shape_str(input.shape()));
  const bool batched = input.dim() == 4;
  const Tensor x = batched ? input : unsqueeze(input, 0);
  const Conv2dArgs a = conv_args("conv2d", 2, x.shape(), weight.shape(), bias, pair_of("conv2d", "stride", stride),
                                 pair_of("conv2d", "padding", padding), pair_of("conv2d", "dilation", dilation), groups);
  const Tensor y = conv2d_node(x, weight, bias, a);
  return batched ? y : squeeze(y, 0);
}

Tensor conv1d(const Tensor& input_in, const Tensor& weight_in, const Tensor& bias_in, int64_t stride, int64_t padding,
                int64_t dilation, int64_t groups) {
  // the lower precision under autocast (Note [Autocast op lists]), the weight cast before it is viewed as 2-D
  using amp::detail::AutocastOp;
  const Tensor input = amp::detail::cast(AutocastOp::Conv1d, input_in),
               weight = amp::detail::cast(AutocastOp::Conv1d, weight_in),
               bias = amp::detail::cast(AutocastOp::Conv1d, bias_in);
  TG_CHECK(input.dim() == 2 || input.dim() == 3, ShapeError,
           "conv1d: Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: ",
           shape_str(input.shape()));
  const bool batched = input.dim() == 3;
  const Tensor x = batched ? input : unsqueeze(input, 0);
  const Conv2dArgs a = conv_args("conv1d", 1, x.shape(), weight.shape(), bias, {1, stride}, {0, padding},
                                 {1, dilation}, groups);
  // (N, C, L) as (N, C, 1, L), weight (O, Cg, K) as (O, Cg, 1, K); the result (N, O, 1, OL) back to 3-D.
  const Tensor y = squeeze(conv2d_node(unsqueeze(x, 2), unsqueeze(weight, 2), bias, a), 2);
  return batched ? y : squeeze(y, 0);
}

namespace {

/// conv_transpose2d (spatial 2) and conv_transpose1d (spatial 1, computed over a height of 1) after
/// autocast and the batch dim: x (N, Cin, *spatial), weight (Cin, Cout / groups, *kernel), PyTorch's
/// checks with op's name and the shapes as the caller gave them; the pairs are (h, w), h = (1, 0, 0, 1)
/// for one spatial dim.
Tensor conv_transpose_node(const char* op, int spatial, const Tensor& x_in, const Tensor& weight_in, const Tensor& bias,
                           std::pair<int64_t, int64_t> stride, std::pair<int64_t, int64_t> padding,
                           std::pair<int64_t, int64_t> output_padding, int64_t groups,
                           std::pair<int64_t, int64_t> dilation) {
  const Shape& xs = x_in.shape();
  const Shape& w = weight_in.shape();
  const std::size_t rank = static_cast<std::size_t>(spatial) + 2;
  // "(h x w)" for two spatial dims, "(w)" for one
  auto sizes = [spatial](int64_t a, int64_t b) { return spatial == 2 ? sizes2(a, b) : "(" + std::to_string(b) + ")"; };
  TG_CHECK(w.size() == rank, ShapeError, op, ": expected weight of ", rank, " dims (in_channels, out_channels / groups, ",
           spatial == 2 ? "kH, kW" : "kW", "), got weight of size ", shape_str(w));
  const int64_t strides[2] = {stride.first, stride.second}, paddings[2] = {padding.first, padding.second},
                dilations[2] = {dilation.first, dilation.second};
  detail::check_conv_params(op, true, xs, w, bias, strides, paddings, dilations, 2, groups);
  TG_CHECK(output_padding.first >= 0 && output_padding.second >= 0 &&
               (output_padding.first < stride.first || output_padding.first < dilation.first) &&
               (output_padding.second < stride.second || output_padding.second < dilation.second),
           ShapeError, op, ": output padding must be smaller than either stride or dilation, but got output_padding ",
           sizes(output_padding.first, output_padding.second), ", stride ", sizes(stride.first, stride.second),
           " and dilation ", sizes(dilation.first, dilation.second));
  const int64_t out_channels = w[1] * groups;
  const int64_t H = spatial == 2 ? xs[2] : 1, W = xs[rank - 1], KH = spatial == 2 ? w[2] : 1, KW = w[rank - 1];
  // The output size: (H - 1) stride - 2 padding + dilation (KH - 1) + output_padding + 1.
  const int64_t oh = (H - 1) * stride.first - 2 * padding.first + dilation.first * (KH - 1) + output_padding.first + 1;
  const int64_t ow = (W - 1) * stride.second - 2 * padding.second + dilation.second * (KW - 1) + output_padding.second + 1;
  TG_CHECK(oh > 0 && ow > 0 && KH > 0 && KW > 0, ShapeError, op, ": Given input size per channel: ",
           sizes(H, W), ". Calculated output size per channel: ", sizes(oh, ow), ". Output size is too small");
  // one spatial dim: (N, Cin, L) as (N, Cin, 1, L), weight (Cin, Cout / groups, K) as (.., 1, K)
  const Tensor x = spatial == 2 ? x_in : unsqueeze(x_in, 2);
  const Tensor weight = spatial == 2 ? weight_in : unsqueeze(weight_in, 2);
  // Note [Transposed convolution]: conv_transpose2d is the input gradient of the conv2d that maps its
  // output (N, Cout, OH, OW) back to its input (N, Cin, H, W) with the same weight, read as that
  // conv2d's (O = Cin, Cout / groups, KH, KW). So the forward is conv2d's dx (col2im), the input's
  // gradient is that conv2d's forward, and the weight's gradient is its weight gradient with the roles
  // of input and output gradient exchanged: all three are conv2d's kernels on both backends. The
  // conv2d's output size is set to H, W explicitly: with output_padding >= stride its own size rule
  // would give one more row, which col2im and im2col never reach.
  Conv2dArgs a;
  a.N = xs[0];
  a.C = out_channels;
  a.H = oh;
  a.W = ow;
  a.O = w[0];
  a.KH = KH;
  a.KW = KW;
  a.OH = H;
  a.OW = W;
  a.stride_h = stride.first;
  a.stride_w = stride.second;
  a.pad_h = padding.first;
  a.pad_w = padding.second;
  a.dil_h = dilation.first;
  a.dil_w = dilation.second;
  a.groups = groups;
  a.dtype = x.dtype();
  prim::check_same_device(op, x.data(), weight.data());
  prim::check_floating(op, x.data());
  TG_CHECK(x.dtype() == weight.dtype(), DTypeError, op, ": input (", dtype_name(x.dtype()), ") and weight (",
           dtype_name(weight.dtype()), ") must have the same dtype");
  RawTensor out = prim::conv2d_backward(RawTensor(), weight.data(), x.data(), a, true, false, false).dx;
  if (bias.defined()) out = prim::add(out, bias.data().reshape({1, out_channels, 1, 1}));
  const bool grad_mode = GradMode::is_enabled();
  SavedTensor x_saved = grad_mode && weight.requires_grad() ? SavedTensor(x) : SavedTensor();
  SavedTensor w_saved = grad_mode && x.requires_grad() ? SavedTensor(weight) : SavedTensor();
  std::vector<Tensor> inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  Tensor y = record(op, out, inputs, [x_saved, w_saved, a](const auto& grad, auto& g) {
    // dx = conv2d(dy, weight); dweight = conv2d's weight gradient with dy as its input and x as its
    // output gradient; dbias = the sum of dy over (N, OH, OW)
    if constexpr (first_order_v<decltype(g)>) {
      if (g.need(0)) g.set(0, prim::conv2d(grad, w_saved.get(), RawTensor(), a));
      if (g.need(1)) g.set(1, prim::conv2d_backward(grad, RawTensor(), x_saved.get(), a, false, true, false).dweight);
      if (g.size() > 2 && g.need(2)) g.set(2, prim::reduce(ReduceOp::Sum, grad, {0, 2, 3}, false, "conv_transpose2d"));
    } else {   // the same as recorded ops: the forward is a Gx, so Note [Convolution gradients as ops] applies
      if (g.need(0)) g.set(0, conv2d_node(grad, g.input(1, w_saved), Tensor(), a));
      if (g.need(1)) g.set(1, conv2d_weight_grad(g.input(0, x_saved), grad, a));
      if (g.size() > 2 && g.need(2)) g.set(2, grad.sum_to_size({1, a.C, 1, 1}).reshape({a.C}));
    }
  });
  return spatial == 2 ? y : squeeze(y, 2);
}

}  // namespace

Tensor conv_transpose2d(const Tensor& input_in, const Tensor& weight_in, const Tensor& bias_in,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& output_padding, int64_t groups,
                        const std::vector<int64_t>& dilation) {
  const char* op = "conv_transpose2d";
  using amp::detail::AutocastOp;
  const Tensor input = amp::detail::cast(AutocastOp::ConvTranspose2d, input_in),
               weight = amp::detail::cast(AutocastOp::ConvTranspose2d, weight_in),
               bias = amp::detail::cast(AutocastOp::ConvTranspose2d, bias_in);
  TG_CHECK(input.dim() == 3 || input.dim() == 4, ShapeError, op,
           ": Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of size: ",
           shape_str(input.shape()));
  const bool batched = input.dim() == 4;
  const Tensor y = conv_transpose_node(op, 2, batched ? input : unsqueeze(input, 0), weight, bias,
                                       pair_of(op, "stride", stride), pair_of(op, "padding", padding),
                                       pair_of(op, "output_padding", output_padding), groups,
                                       pair_of(op, "dilation", dilation));
  return batched ? y : squeeze(y, 0);
}

Tensor conv_transpose1d(const Tensor& input_in, const Tensor& weight_in, const Tensor& bias_in, int64_t stride,
                        int64_t padding, int64_t output_padding, int64_t groups, int64_t dilation) {
  const char* op = "conv_transpose1d";
  // the lower precision under autocast, as conv_transpose2d (PyTorch's list has both)
  using amp::detail::AutocastOp;
  const Tensor input = amp::detail::cast(AutocastOp::ConvTranspose2d, input_in),
               weight = amp::detail::cast(AutocastOp::ConvTranspose2d, weight_in),
               bias = amp::detail::cast(AutocastOp::ConvTranspose2d, bias_in);
  TG_CHECK(input.dim() == 2 || input.dim() == 3, ShapeError, op,
           ": Expected 2D (unbatched) or 3D (batched) input to conv_transpose1d, but got input of size: ",
           shape_str(input.shape()));
  const bool batched = input.dim() == 3;
  const Tensor y = conv_transpose_node(op, 1, batched ? input : unsqueeze(input, 0), weight, bias, {1, stride},
                                       {0, padding}, {0, output_padding}, groups, {1, dilation});
  return batched ? y : squeeze(y, 0);
}

namespace {

/// The Pool2dArgs of op for x (N, C, H, W) with PyTorch's checks and output size rule: with ceil_mode
/// the size rounds up, less one when the last window would start past the input and its left padding
/// (PyTorch's pooling_output_shape), so every window reads at least one input element.
Pool2dArgs pool_args(const char* op, const Shape& x, const std::vector<int64_t>& kernel_size,
                     const std::vector<int64_t>& stride_in, const std::vector<int64_t>& padding,
                     const std::vector<int64_t>& dilation, bool ceil_mode, bool count_include_pad) {
  const auto k = pair_of(op, "kernel_size", kernel_size);
  const auto s = stride_in.empty() ? k : pair_of(op, "stride", stride_in);
  const auto p = pair_of(op, "padding", padding);
  const auto d = pair_of(op, "dilation", dilation);
  TG_CHECK(k.first > 0 && k.second > 0, ShapeError, op, ": kernel_size must be greater than zero, but got ",
           sizes2(k.first, k.second));
  TG_CHECK(s.first > 0 && s.second > 0, ShapeError, op, ": stride must be greater than zero, but got ",
           sizes2(s.first, s.second));
  TG_CHECK(d.first > 0 && d.second > 0, ShapeError, op, ": dilation must be greater than zero, but got ",
           sizes2(d.first, d.second));
  TG_CHECK(p.first >= 0 && p.second >= 0 && p.first <= k.first / 2 && p.second <= k.second / 2, ShapeError, op,
           ": pad should be at most half of effective kernel size, but got pad=", sizes2(p.first, p.second),
           ", kernel_size=", sizes2(k.first, k.second), " and dilation=", sizes2(d.first, d.second));
  Pool2dArgs a;
  a.P = x[0] * x[1];
  a.H = x[2];
  a.W = x[3];
  a.KH = k.first;
  a.KW = k.second;
  a.stride_h = s.first;
  a.stride_w = s.second;
  a.pad_h = p.first;
  a.pad_w = p.second;
  a.dil_h = d.first;
  a.dil_w = d.second;
  a.count_include_pad = count_include_pad;
  // Division rounding toward -inf (a window larger than the padded input gives 0: PyTorch's message).
  auto div_floor = [](int64_t num, int64_t den) { return num >= 0 ? num / den : -((-num + den - 1) / den); };
  auto out_size = [ceil_mode, div_floor](int64_t size, int64_t kernel, int64_t pad, int64_t step, int64_t dil) {
    int64_t o = div_floor(size + 2 * pad - dil * (kernel - 1) - 1 + (ceil_mode ? step - 1 : 0), step) + 1;
    if (ceil_mode && (o - 1) * step >= size + pad) --o;   // the last window starts inside the input or left padding
    return o;
  };
  a.OH = out_size(a.H, a.KH, a.pad_h, a.stride_h, a.dil_h);
  a.OW = out_size(a.W, a.KW, a.pad_w, a.stride_w, a.dil_w);
  TG_CHECK(a.OH >= 1 && a.OW >= 1, ShapeError, op, ": Given input size: (", x[1], "x", x[2], "x", x[3],
           "). Calculated output size: (", x[1], "x", std::max<int64_t>(0, a.OH), "x", std::max<int64_t>(0, a.OW),
           "). Output size is too small (kernel_size ", sizes2(a.KH, a.KW), ", padding ", sizes2(a.pad_h, a.pad_w),
           ", dilation ", sizes2(a.dil_h, a.dil_w), ")");
  return a;
}

void check_pool_rank(const char* op, const Tensor& x) {
  TG_CHECK(x.dim() == 3 || x.dim() == 4, ShapeError, op, ": Expected 3D or 4D (batch mode) tensor for input, got ",
           shape_str(x.shape()));
}

}  // namespace

namespace {
/// max_pool2d's gradient: dy added at each window's argmax (indices: flat positions in each H x W
/// plane). Under create_graph an op of its own, whose gradient gathers the incoming one at the same
/// positions (the second derivative of a max is 0).
template <class G>
G max_pool_grad(const G& grad, const RawTensor& indices, const Shape& x_shape, const Pool2dArgs& a) {
  const Shape out_shape = grad.shape();
  return rules::linear_backward(
      "max_pool2d_backward", grad, [&](const RawTensor& u) { return prim::max_pool2d_backward(u, indices, x_shape, a); },
      [indices, x_shape, out_shape](const Tensor& u) {
        const int64_t N = x_shape[0], C = x_shape[1];
        return gather(u.reshape({N, C, -1}), 2, Tensor(indices.reshape({N, C, -1}))).reshape(out_shape);
      });
}
}  // namespace

Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                    IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  check_pool_rank("max_pool2d", input);
  const bool batched = input.dim() == 4;
  const Tensor x = batched ? input : unsqueeze(input, 0);
  const Pool2dArgs a = pool_args("max_pool2d", x.shape(), kernel_size, stride, padding, dilation, ceil_mode, true);
  std::pair<RawTensor, RawTensor> r = prim::max_pool2d(x.data(), a);
  const RawTensor indices = any_requires_grad({x}) ? r.second : RawTensor();   // int64 positions, not visible to users
  const Shape x_shape = x.shape();
  const Tensor y = record("max_pool2d", r.first, {x}, [indices, x_shape, a](const auto& grad, auto& g) {
    g.set(0, max_pool_grad(grad, indices, x_shape, a));               // dx[argmax of each window] += dy
  });
  return batched ? y : squeeze(y, 0);
}

namespace {
Tensor avg_pool_node(const char* name, const Tensor& x, const Pool2dArgs& a);

/// avg_pool2d's gradient (a linear map, the pooling's transpose). Under create_graph an op of its own,
/// whose gradient is the pooling itself.
template <class G>
G avg_pool_grad(const G& grad, const Shape& x_shape, const Pool2dArgs& a) {
  return rules::linear_backward(
      a.adaptive ? "adaptive_avg_pool2d_backward" : "avg_pool2d_backward", grad,
      [&](const RawTensor& u) { return prim::avg_pool2d_backward(u, x_shape, a); },   // dx[window] += dy / divisor
      [a](const Tensor& u) { return avg_pool_node(a.adaptive ? "adaptive_avg_pool2d" : "avg_pool2d", u, a); });
}

Tensor avg_pool_node(const char* name, const Tensor& x, const Pool2dArgs& a) {
  const RawTensor out = prim::avg_pool2d(x.data(), a);
  const Shape x_shape = x.shape();
  return record(name, out, {x}, [x_shape, a](const auto& grad, auto& g) { g.set(0, avg_pool_grad(grad, x_shape, a)); });
}
}  // namespace

Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                    IntArrayRef padding, bool count_include_pad, bool ceil_mode) {
  check_pool_rank("avg_pool2d", input);
  const bool batched = input.dim() == 4;
  const Tensor x = batched ? input : unsqueeze(input, 0);
  const Pool2dArgs a = pool_args("avg_pool2d", x.shape(), kernel_size, stride, padding, {1}, ceil_mode, count_include_pad);
  const Tensor y = avg_pool_node("avg_pool2d", x, a);
  return batched ? y : squeeze(y, 0);
}

Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  check_pool_rank("adaptive_avg_pool2d", input);
  const bool batched = input.dim() == 4;
  const Tensor x = batched ? input : unsqueeze(input, 0);
  const auto o = pair_of("adaptive_avg_pool2d", "output_size", output_size);
  TG_CHECK(o.first > 0 && o.second > 0, ShapeError, "adaptive_avg_pool2d: elements of output_size must be positive, got ",
           sizes2(o.first, o.second));
  TG_CHECK(x.shape()[2] > 0 && x.shape()[3] > 0, ShapeError,
           "adaptive_avg_pool2d: expected input with non-zero height and width, got ", shape_str(input.shape()));
  Pool2dArgs a;
  a.P = x.shape()[0] * x.shape()[1];
  a.H = x.shape()[2];
  a.W = x.shape()[3];
  a.OH = o.first;
  a.OW = o.second;
  a.adaptive = true;
  const Tensor y = avg_pool_node("adaptive_avg_pool2d", x, a);
  return batched ? y : squeeze(y, 0);
}

}  // namespace tg
