// ops/norm_extra.cpp: instance_norm, composed of other ops: group_norm with one group per channel
// normalizes with each instance's statistics (so the gradients, first and second, and the CUDA path are
// group_norm's), elementwise ops with the running statistics. The running statistics are updated here
// without gradient. batch_norm, layer_norm and group_norm themselves are in ops/norm.cpp; the modules
// InstanceNorm1d / InstanceNorm2d in nn/norm.h.
#include <string>

#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/prim/prim.h"

namespace tg {

Tensor instance_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                     const Tensor& bias, bool use_input_stats, double momentum, double eps) {
  // input (N, C, *); running_mean, running_var, weight, bias (C) or undefined -> (N, C, *)
  const char* op = "instance_norm";
  TG_CHECK(input.dim() >= 2, ShapeError, op, ": expected input of at least 2 dims (N, C, ...), got ",
           shape_str(input.shape()));
  prim::check_floating(op, input.data());
  const int64_t N = input.shape()[0], C = input.shape()[1];
  const int64_t spatial = C == 0 || N == 0 ? 0 : input.numel() / (N * C);   // elements per instance
  for (const Tensor* p : {&running_mean, &running_var, &weight, &bias})
    if (p->defined()) {
      TG_CHECK(p->shape() == Shape{C}, ShapeError, op, ": expected weight, bias, running_mean and running_var of ",
               "shape [", C, "] for input of size ", shape_str(input.shape()), ", got ", shape_str(p->shape()));
      prim::check_same_device(op, input.data(), p->data());
    }
  TG_CHECK(use_input_stats || (running_mean.defined() && running_var.defined()), Error, op,
           ": Expected running_mean and running_var to be defined when use_input_stats is false");
  TG_CHECK(!running_mean.requires_grad() && !running_var.requires_grad(), AutogradError, op,
           ": running_mean and running_var are buffers and must not require grad");
  const Tensor x = input;
  if (!use_input_stats) {
    // (x - running_mean) / sqrt(running_var + eps) per channel, then weight and bias: the statistics
    // are constants of x's dtype, viewed as (1, C, 1, ...)
    Shape cshape(static_cast<std::size_t>(x.dim()), 1);
    cshape[1] = C;
    const Tensor rm(running_mean.data().to(x.dtype()).reshape(cshape)),
        rv(running_var.data().to(x.dtype()).reshape(cshape));
    Tensor y = (x - rm) * rsqrt(rv + eps);
    if (weight.defined()) y = y * reshape(weight, cshape);
    if (bias.defined()) y = y + reshape(bias, cshape);
    return y;
  }
  TG_CHECK(spatial > 1 || N * C == 0, ShapeError, op, ": Expected more than 1 spatial element when training, got ",
           "input size ", shape_str(input.shape()));
  if ((running_mean.defined() || running_var.defined()) && N * C > 0) {
    // running = (1 - momentum) running + momentum s, with s the mean over the batch of each instance's
    // mean (unbiased variance), as PyTorch's batch_norm over (1, N C, *) followed by a mean over N
    NoGradGuard no_grad;
    const Tensor flat = reshape(x.detach(), {N, C, spatial});
    auto update = [momentum](const Tensor& running, const Tensor& batch) {
      const RawTensor r = running.data();
      prim::copy_(r, prim::add(prim::mul(r.to(batch.dtype()), 1.0 - momentum), prim::mul(batch.data(), momentum)));
    };
    if (running_mean.defined()) update(running_mean, mean(mean(flat, 2), 0));
    if (running_var.defined()) update(running_var, mean(var(flat, {2}, true), 0));
  }
  // each (n, c) instance is a group of one channel
  return group_norm(x, C, weight, bias, eps);
}

}  // namespace tg
