// ops/ctc_loss.cpp: the connectionist temporal classification loss (torch.nn.functional.ctc_loss):
// argument checks, the reduction, and one recorded op whose rule is PyTorch's gradient. The alpha-beta
// recursions are Backend::ctc_loss / ctc_loss_backward through prim/ctc_loss.cpp (Note [ctc_loss] in
// kernels/ctc.h), on the input's device. The other losses (compositions of differentiable ops) are in
// ops/loss.cpp; the module CTCLoss and functional::ctc_loss with CTCLossFuncOptions in nn/loss.h,
// nn/functional.h.
#include <algorithm>
#include <cmath>
#include <vector>

#include "tensorgrad/kernels/ctc.h"
#include "tensorgrad/ops/autocast.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/prim/prim.h"

namespace tg {

namespace {

/// A length tensor (N) or 0-d as int64 values on the host; ShapeError for another size.
std::vector<int64_t> read_lengths(const char* what, const Tensor& lengths, int64_t N, bool batched) {
  TG_CHECK(lengths.defined(), Error, "ctc_loss: ", what, " is undefined");
  TG_CHECK(lengths.dtype() == kInt64 || lengths.dtype() == kInt32, DTypeError, "ctc_loss: ", what,
           " must be an int64 (or int32) tensor, got ", dtype_name(lengths.dtype()));
  TG_CHECK(batched ? (lengths.dim() == 1 && lengths.size(0) == N) : lengths.numel() == 1 && lengths.dim() <= 1,
           ShapeError, "ctc_loss: ", what, " must be of size batch_size (", N, "), got ", shape_str(lengths.shape()));
  const RawTensor host = lengths.data().to(Device::cpu()).to(kInt64).contiguous();
  const int64_t* p = host.data<int64_t>();
  return std::vector<int64_t>(p, p + host.numel());
}

}  // namespace

Tensor ctc_loss(const Tensor& log_probs_in, const Tensor& targets, const std::vector<int64_t>& input_lengths,
                const std::vector<int64_t>& target_lengths, int64_t blank, Reduction reduction, bool zero_infinity) {
  const char* op = "ctc_loss";
  // float32 under CPU autocast; CUDA's list does not have it (Note [Autocast op lists])
  const Tensor log_probs =
      log_probs_in.defined() ? amp::detail::cast(amp::detail::AutocastOp::CtcLoss, log_probs_in) : log_probs_in;
  // ---- checks, before anything is computed
  TG_CHECK(log_probs.dim() == 3 || log_probs.dim() == 2, ShapeError, op,
           ": log_probs must be (T, N, C) or unbatched (T, C), got ", shape_str(log_probs.shape()));
  prim::check_floating(op, log_probs.data());
  TG_CHECK(targets.dtype() == kInt64 || targets.dtype() == kInt32, DTypeError, op,
           ": targets must be an int64 (or int32) tensor, got ", dtype_name(targets.dtype()));
  const bool batched = log_probs.dim() == 3;
  const int64_t T = log_probs.size(0), N = batched ? log_probs.size(1) : 1, C = log_probs.size(-1);
  TG_CHECK(blank >= 0 && blank < C, IndexError, op, ": blank must be in label range: blank ", blank, " for ", C,
           " classes");
  TG_CHECK(static_cast<int64_t>(input_lengths.size()) == N, ShapeError, op, ": input_lengths must be of size batch_size (",
           N, "), got ", input_lengths.size());
  TG_CHECK(static_cast<int64_t>(target_lengths.size()) == N, ShapeError, op,
           ": target_lengths must be of size batch_size (", N, "), got ", target_lengths.size());
  // padded targets (N, S) (unbatched: (S)), or batched 1-D targets concatenated
  const bool concatenated = batched && targets.dim() == 1;
  if (batched) {
    TG_CHECK(targets.dim() == 2 || targets.dim() == 1, ShapeError, op,
             ": targets must be (N, S) padded or 1-D concatenated for log_probs ", shape_str(log_probs.shape()),
             ", got ", shape_str(targets.shape()));
    TG_CHECK(concatenated || targets.size(0) == N, ShapeError, op, ": targets ", shape_str(targets.shape()),
             " must have batch_size (", N, ") rows for log_probs ", shape_str(log_probs.shape()));
  } else {
    TG_CHECK(targets.dim() == 1, ShapeError, op, ": unbatched log_probs ", shape_str(log_probs.shape()),
             " expect 1-D targets, got ", shape_str(targets.shape()));
  }
  const int64_t S = targets.dim() == 2 ? targets.size(1) : targets.size(0);
  int64_t total = 0;
  for (int64_t b = 0; b < N; ++b) {
    const int64_t il = input_lengths[b], tl = target_lengths[b];
    TG_CHECK(il >= 0 && il <= T, Error, op, ": Expected input_lengths to have value at most ", T,
             " (and at least 0), but got value ", il, " for batch entry ", b);
    TG_CHECK(tl >= 0, Error, op, ": Expected target_lengths to be at least 0, but got value ", tl, " for batch entry ", b);
    TG_CHECK(concatenated || tl <= S, ShapeError, op, ": Expected tensor to have size at least ", tl,
             " at dimension ", targets.dim() - 1, ", but got size ", S, " for argument 'targets'");
    total += tl;
  }
  TG_CHECK(!concatenated || total <= S, ShapeError, op, ": concatenated targets hold ", S,
           " labels, fewer than the sum of target_lengths (", total, ")");
  prim::check_same_device(op, log_probs.data(), targets.data());

  // ---- the lengths (3, N) on the device: input lengths, target lengths, each entry's offset in targets
  std::vector<int64_t> len(3 * N);
  int64_t longest = 0;
  for (int64_t b = 0, o = 0; b < N; ++b) {
    len[b] = input_lengths[b];
    len[N + b] = target_lengths[b];
    len[2 * N + b] = concatenated ? o : b * S;
    o += target_lengths[b];
    longest = std::max(longest, target_lengths[b]);
  }
  const Device device = log_probs.device();
  const DType dtype = log_probs.dtype();
  const RawTensor lengths = prim::from_host(len.data(), Shape{3, N}, kInt64, device);
  const RawTensor lp = batched ? log_probs.data() : log_probs.data().unsqueeze(1);
  CtcArgs args;
  args.T = T;
  args.N = N;
  args.C = C;
  args.S = longest;
  args.blank = blank;
  args.zero_infinity = zero_infinity;
  args.mean = reduction == Reduction::Mean;
  const prim::CtcLoss fwd = prim::ctc_loss(lp, targets.data(), lengths, args);

  // ---- the reduction: per-entry losses (zero_infinity: inf -> 0), each times its factor
  RawTensor loss = fwd.nll;
  if (zero_infinity) {
    const RawTensor inf = prim::binary(BinaryOp::Eq, prim::unary(UnaryOp::Abs, loss), prim::scalar_like(INFINITY, loss), op);
    loss = prim::where(inf, prim::scalar_like(0.0, loss), loss);
  }
  RawTensor out;
  if (reduction == Reduction::None) {
    out = batched ? loss : loss.reshape(Shape{});
  } else {
    std::vector<double> scale(N);
    for (int64_t b = 0; b < N; ++b) scale[b] = ctc_math::scale(args.mean, target_lengths[b], N);
    out = prim::sum(prim::mul(loss, prim::from_host(scale.data(), Shape{N}, kFloat64, device)));
  }
  out = out.to(dtype);
  if (!(GradMode::is_enabled() && log_probs.requires_grad())) return Tensor(out);
  // the rule of Note [ctc_loss gradient], (T, N, C), the reduction's factors folded in
  const RawTensor rule = prim::ctc_loss_backward(lp, targets.data(), lengths, fwd, args).reshape(log_probs.shape());
  // the incoming gradient: 0-d for mean and sum, (N) for none (0-d unbatched), broadcast along (T, ., C)
  const Shape grad_view = reduction == Reduction::None && batched ? Shape{1, N, 1} : Shape{};
  return record(op, out, {log_probs}, [rule, grad_view](const RawTensor& g_out, Grads& g) {
    if (g.need(0)) g.set(0, prim::mul(rule, g_out.reshape(grad_view)));   // d loss / d lp: the rule times the incoming gradient
  });
}

Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, int64_t blank, Reduction reduction, bool zero_infinity) {
  TG_CHECK(log_probs.dim() == 3 || log_probs.dim() == 2, ShapeError,
           "ctc_loss: log_probs must be (T, N, C) or unbatched (T, C), got ", shape_str(log_probs.shape()));
  const bool batched = log_probs.dim() == 3;
  const int64_t N = batched ? log_probs.size(1) : 1;
  return ctc_loss(log_probs, targets, read_lengths("input_lengths", input_lengths, N, batched),
                  read_lengths("target_lengths", target_lengths, N, batched), blank, reduction, zero_infinity);
}

}  // namespace tg
