// prim/softmax_loss.cpp: the softmax and loss family (kernels/softmax_loss.h): (log-)softmax, its
// gradient, and the fused softmax-cross-entropy forward and backward.
#include "tensorgrad/prim/prim.h"

#include <limits>

#include "tensorgrad/core/error.h"
#include "tensorgrad/kernels/index.h"
#include "tensorgrad/kernels/softmax_loss.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

RawTensor softmax(const RawTensor& x, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  check_defined(name, x);
  check_floating(name, x);
  if (is_low_precision(x.dtype())) return softmax(x.to(kFloat32), dim, log).to(x.dtype());
  dim = wrap_dim(dim, x.dim(), name);
  const RawTensor xc = x.contiguous();
  RawTensor out = RawTensor::empty(x.shape(), x.dtype(), x.device());
  if (out.numel() > 0) backend_for(x.device()).softmax(xc, dim, log, out);
  return out;
}

RawTensor softmax_backward(const RawTensor& y, const RawTensor& dy, int64_t dim, bool log) {
  if (is_low_precision(y.dtype()))
    return softmax_backward(y.to(kFloat32), as_dtype(dy, kFloat32), dim, log).to(y.dtype());
  RawTensor dx = RawTensor::empty(y.shape(), y.dtype(), y.device());
  if (dx.numel() > 0) backend_for(y.device()).softmax_backward(y.contiguous(), dy.contiguous(), dim, log, dx);
  return dx;
}

CrossEntropyResult cross_entropy(const RawTensor& logits, const RawTensor& target, const CrossEntropyArgs& args) {
  check_defined("cross_entropy", logits);
  check_defined("cross_entropy", target);
  check_floating("cross_entropy", logits);
  check_same_device("cross_entropy", logits, target);
  TG_CHECK(logits.dim() == 2, ShapeError, "cross_entropy: expected logits of shape (N, C), got ",
           shape_str(logits.shape()));
  TG_CHECK(target.dtype() == kInt64, DTypeError,
           "cross_entropy: expected target to hold int64 class indices, got ", dtype_name(target.dtype()));
  TG_CHECK(target.dim() == 1 && target.shape()[0] == logits.shape()[0], ShapeError,
           "cross_entropy: expected target of shape (", logits.shape()[0], "), got ", shape_str(target.shape()),
           " for logits of shape ", shape_str(logits.shape()));
  if (is_low_precision(logits.dtype())) {   // lse and count stay float32: only the backward reads them
    CrossEntropyResult r = cross_entropy(logits.to(kFloat32), target, args);
    r.loss = r.loss.to(logits.dtype());
    if (r.total.defined()) r.total = r.total.to(logits.dtype());
    return r;
  }
  const int64_t N = logits.shape()[0], C = logits.shape()[1];
  TG_CHECK(C > 0 || N == 0, ShapeError, "cross_entropy: logits have 0 classes");
  TG_CHECK(args.label_smoothing >= 0 && args.label_smoothing <= 1, Error,
           "cross_entropy: label_smoothing must be in [0, 1], got ", args.label_smoothing);
  if (target.device().is_cpu()) {   // CUDA targets: the kernel's device error flag, raised at the next sync
    const RawTensor t = target.contiguous();
    for (int64_t i = 0; i < N; ++i) {
      const int64_t v = t.data<int64_t>()[i];
      if (!index_math::in_range(v, C) && softmax_math::ce_counts(v, args.ignore_index))
        throw cross_entropy_target_error(v, C);
    }
  }
  CrossEntropyResult r;
  r.loss = RawTensor::empty({N}, logits.dtype(), logits.device());
  r.lse = RawTensor::empty({N}, logits.dtype(), logits.device());
  if (args.total) r.total = RawTensor::empty({}, logits.dtype(), logits.device());
  if (args.mean) r.count = RawTensor::empty({}, logits.dtype(), logits.device());
  if (N > 0) {
    backend_for(logits.device()).cross_entropy(logits.contiguous(), target.contiguous(), args, r.loss, r.lse, r.total, r.count);
  } else {   // no rows: the sum is 0, the mean 0 / 0
    if (args.total) fill_(r.total, args.mean ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    if (args.mean) fill_(r.count, 0.0);
  }
  return r;
}

RawTensor cross_entropy_backward(const RawTensor& logits, const RawTensor& target, const CrossEntropyArgs& args,
                              const RawTensor& lse, const RawTensor& dloss, const RawTensor& count) {
  TG_CHECK(!args.mean || count.defined(), Error, "cross_entropy_backward: the mean needs the forward's count");
  if (is_low_precision(logits.dtype()))   // lse and count are float32 (cross_entropy above)
    return cross_entropy_backward(logits.to(kFloat32), target, args, lse, as_dtype(dloss, kFloat32), count)
        .to(logits.dtype());
  RawTensor dlogits = RawTensor::empty(logits.shape(), logits.dtype(), logits.device());
  if (dlogits.numel() > 0)
    backend_for(logits.device())
        .cross_entropy_backward(logits.contiguous(), target.contiguous(), args, lse, dloss.expand({logits.shape()[0]}),
                                count, dlogits);
  return dlogits;
}

}  // namespace prim
}  // namespace tg
