// prim/ctc_loss.cpp: the CTC loss's forward and gradient rule through Backend::ctc_loss /
// ctc_loss_backward (Note [ctc_loss] in kernels/ctc.h). Checks the operands against the op's
// arguments, the labels of CPU targets on the host (the CUDA forward kernel checks its own), brings
// float16/bfloat16 through float32 and int32 targets to int64, and allocates; the op (ops/ctc_loss.cpp)
// has checked the lengths.
#include "tensorgrad/prim/prim.h"

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

namespace {
/// log_probs contiguous, in float32 when it is a 16-bit float.
RawTensor operand(const RawTensor& t) { return through_float32(t).contiguous(); }

/// Checks log_probs, targets and lengths against args; returns targets as int64, contiguous.
RawTensor checked_targets(const char* op, const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths,
                          const CtcArgs& args) {
  for (const RawTensor* t : {&log_probs, &targets, &lengths}) {
    check_defined(op, *t);
    check_same_device(op, log_probs, *t);
  }
  check_floating(op, log_probs);
  TG_CHECK(log_probs.shape() == Shape({args.T, args.N, args.C}), ShapeError, op, ": log_probs of shape ",
           shape_str(log_probs.shape()), " for (T, N, C) = (", args.T, ", ", args.N, ", ", args.C, ")");
  TG_CHECK(lengths.dtype() == kInt64 && lengths.shape() == Shape({3, args.N}), ShapeError, op,
           ": expected int64 lengths of shape (3, ", args.N, "), got ", shape_str(lengths.shape()));
  TG_CHECK(targets.dtype() == kInt64 || targets.dtype() == kInt32, DTypeError, op,
           ": targets must be an int64 (or int32) tensor, got ", dtype_name(targets.dtype()));
  TG_CHECK(args.blank >= 0 && args.blank < args.C && args.S >= 0, IndexError, op, ": blank ", args.blank,
           " out of range for ", args.C, " classes");
  return as_dtype(targets, kInt64).contiguous();
}
}  // namespace

CtcLoss ctc_loss(const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths, const CtcArgs& args) {
  const char* op = "ctc_loss";
  const RawTensor tgt = checked_targets(op, log_probs, targets, lengths, args);
  const RawTensor lp = operand(log_probs), len = lengths.contiguous();
  const Device device = lp.device();
  if (device.is_cpu()) {   // CUDA labels: checked by the forward kernel (Note [ctc_loss])
    const int64_t *l = len.data<int64_t>(), *t = tgt.data<int64_t>();
    for (int64_t b = 0; b < args.N; ++b) {
      const int64_t L = l[args.N + b], offset = l[2 * args.N + b];
      TG_CHECK(L >= 0 && L <= args.S && offset >= 0 && offset + L <= tgt.numel(), ShapeError, op, ": target length ", L,
               " at offset ", offset, " of batch entry ", b, " outside the targets (", tgt.numel(), " labels)");
      for (int64_t i = 0; i < L; ++i) {
        const int64_t label = t[offset + i];
        if (label < 0 || label >= args.C || label == args.blank) throw ctc_target_error(label, b, i, args.C, args.blank);
      }
    }
  }
  CtcLoss r;
  r.nll = RawTensor::empty({args.N}, kFloat64, device);
  r.alpha = RawTensor::empty({args.N, args.T, 2 * args.S + 1}, kFloat64, device);
  if (args.N > 0) backend_for(device).ctc_loss(lp, tgt, len, args, r.alpha, r.nll);
  return r;
}

RawTensor ctc_loss_backward(const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths,
                            const CtcLoss& forward, const CtcArgs& args) {
  const char* op = "ctc_loss_backward";
  const RawTensor tgt = checked_targets(op, log_probs, targets, lengths, args);
  const RawTensor lp = operand(log_probs);
  const Device device = lp.device();
  TG_CHECK(forward.nll.shape() == Shape({args.N}) && forward.alpha.shape() == Shape({args.N, args.T, 2 * args.S + 1}) &&
               forward.nll.dtype() == kFloat64 && forward.alpha.dtype() == kFloat64 && forward.nll.device() == device &&
               forward.alpha.device() == device,
           ShapeError, op, ": the forward's nll ", shape_str(forward.nll.shape()), " and alpha ",
           shape_str(forward.alpha.shape()), " do not match (T, N, C) = (", args.T, ", ", args.N, ", ", args.C,
           ") with targets of at most ", args.S, " labels");
  RawTensor grad = RawTensor::empty(lp.shape(), lp.dtype(), device);
  const RawTensor beta = RawTensor::empty({args.N, 2, 2 * args.S + 1}, kFloat64, device);
  if (grad.numel() > 0)
    backend_for(device).ctc_loss_backward(lp, tgt, lengths.contiguous(), forward.alpha.contiguous(),
                                          forward.nll.contiguous(), args, beta, grad);
  if (grad.dtype() != log_probs.dtype()) grad = grad.to(log_probs.dtype());
  return grad;
}

}  // namespace prim
}  // namespace tg
