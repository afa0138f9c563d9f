// prim/conv.cpp: the graph-free convolution and pooling of prim/prim.h: dtype and device
// checks, contiguous operands, allocation, and the backend call (backend/cpu/conv.cpp, backend/cuda/conv.cu).
// The geometry (ranks, channels, kernel against input) is checked by the ops in ops/conv.cpp, which
// build the Conv2dArgs / Pool2dArgs these take.
#include <utility>

#include "tensorgrad/prim/prim.h"

#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

namespace {
// Note [Low precision through float32] (prim/blas.cpp): float16 / bfloat16 operands run the float32
// kernels and are rounded back once.
RawTensor back_to(const RawTensor& t, DType dtype) { return t.defined() && t.dtype() != dtype ? t.to(dtype) : t; }
}  // namespace

RawTensor conv2d(const RawTensor& x, const RawTensor& weight, const RawTensor& bias, const Conv2dArgs& args) {
  check_same_device("conv2d", x, weight);
  check_same_dtype("conv2d", x, weight);
  if (bias.defined()) {
    check_same_device("conv2d", x, bias);
    check_same_dtype("conv2d", x, bias);
  }
  check_floating("conv2d", x);
  if (is_low_precision(x.dtype()))
    return conv2d(through_float32(x), through_float32(weight), through_float32(bias), args).to(x.dtype());
  Conv2dArgs a = args;
  a.dtype = x.dtype();
  RawTensor out = RawTensor::empty({a.N, a.O, a.OH, a.OW}, x.dtype(), x.device());
  if (out.numel() == 0) return out;
  backend_for(x.device()).conv2d(x.contiguous(), weight.contiguous(), bias.defined() ? bias.contiguous() : RawTensor(), a,
                                 out);
  return out;
}

Conv2dGrads conv2d_backward(const RawTensor& x, const RawTensor& weight, const RawTensor& dy_in, const Conv2dArgs& args,
                            bool want_dx, bool want_dweight, bool want_dbias) {
  const DType dtype = dy_in.dtype();
  if (is_low_precision(dtype)) {
    Conv2dGrads g = conv2d_backward(through_float32(x), through_float32(weight), through_float32(dy_in), args, want_dx, want_dweight,
                                    want_dbias);
    return {back_to(g.dx, dtype), back_to(g.dweight, dtype), back_to(g.dbias, dtype)};
  }
  TG_CHECK(!want_dx || weight.defined(), Error, "conv2d: the gradient of the input needs the weight");
  TG_CHECK(!want_dweight || x.defined(), Error, "conv2d: the gradient of the weight needs the input");
  const RawTensor dy = dy_in.contiguous();
  const Device device = dy.device();
  Conv2dArgs a = args;
  a.dtype = dtype;
  Conv2dGrads g;
  if (want_dx) g.dx = RawTensor::empty({a.N, a.C, a.H, a.W}, dtype, device);
  if (want_dweight) g.dweight = RawTensor::empty({a.O, a.C / a.groups, a.KH, a.KW}, dtype, device);
  if (want_dbias) g.dbias = RawTensor::empty({a.O}, dtype, device);
  if (dy.numel() == 0) {   // empty batch: zero gradients, no kernel
    for (RawTensor* t : {&g.dx, &g.dweight, &g.dbias})
      if (t->defined() && t->numel() > 0) fill_(*t, 0.0);
    return g;
  }
  const RawTensor xc = want_dweight ? x.contiguous() : RawTensor();
  const RawTensor wc = want_dx ? weight.contiguous() : RawTensor();
  if (xc.defined()) check_same_dtype("conv2d", xc, dy);
  if (wc.defined()) check_same_dtype("conv2d", wc, dy);
  backend_for(device).conv2d_backward(xc, wc, dy, a, g.dx, g.dweight, g.dbias);
  return g;
}

std::pair<RawTensor, RawTensor> max_pool2d(const RawTensor& x_in, const Pool2dArgs& args) {
  check_floating("max_pool2d", x_in);
  if (is_low_precision(x_in.dtype())) {   // exact either way: a maximum needs no rounding
    std::pair<RawTensor, RawTensor> r = max_pool2d(through_float32(x_in), args);
    return {r.first.to(x_in.dtype()), r.second};
  }
  const RawTensor x = x_in.contiguous();
  const int64_t N = x.shape()[0], C = x.shape()[1];
  RawTensor out = RawTensor::empty({N, C, args.OH, args.OW}, x.dtype(), x.device());
  RawTensor indices = RawTensor::empty({N, C, args.OH, args.OW}, kInt64, x.device());
  if (out.numel() > 0) backend_for(x.device()).max_pool2d(x, args, out, indices);
  return {out, indices};
}

RawTensor max_pool2d_backward(const RawTensor& dy_in, const RawTensor& indices, const Shape& x_shape, const Pool2dArgs& args) {
  if (is_low_precision(dy_in.dtype()))
    return max_pool2d_backward(through_float32(dy_in), indices, x_shape, args).to(dy_in.dtype());
  const RawTensor dy = dy_in.contiguous();
  RawTensor dx = RawTensor::empty(x_shape, dy.dtype(), dy.device());
  if (dx.numel() == 0) return dx;
  if (dy.numel() == 0) {
    fill_(dx, 0.0);
    return dx;
  }
  backend_for(dy.device()).max_pool2d_backward(dy, indices.contiguous(), args, dx);
  return dx;
}

RawTensor avg_pool2d(const RawTensor& x_in, const Pool2dArgs& args) {
  check_floating(args.adaptive ? "adaptive_avg_pool2d" : "avg_pool2d", x_in);
  if (is_low_precision(x_in.dtype())) return avg_pool2d(through_float32(x_in), args).to(x_in.dtype());
  const RawTensor x = x_in.contiguous();
  RawTensor out = RawTensor::empty({x.shape()[0], x.shape()[1], args.OH, args.OW}, x.dtype(), x.device());
  if (out.numel() > 0) backend_for(x.device()).avg_pool2d(x, args, out);
  return out;
}

RawTensor avg_pool2d_backward(const RawTensor& dy_in, const Shape& x_shape, const Pool2dArgs& args) {
  if (is_low_precision(dy_in.dtype())) return avg_pool2d_backward(through_float32(dy_in), x_shape, args).to(dy_in.dtype());
  const RawTensor dy = dy_in.contiguous();
  RawTensor dx = RawTensor::empty(x_shape, dy.dtype(), dy.device());
  if (dx.numel() == 0) return dx;
  if (dy.numel() == 0) {
    fill_(dx, 0.0);
    return dx;
  }
  backend_for(dy.device()).avg_pool2d_backward(dy, args, dx);
  return dx;
}

}  // namespace prim
}  // namespace tg
