// backend/cuda/ctc_loss.cu: the CTC loss of the CUDA Backend (Note [ctc_loss] in kernels/ctc.h): one
// block per batch entry, its threads over the states (and the classes), looping over t with a
// __syncthreads between steps; one launch for the forward (alpha, nll), one for the gradient (beta
// and the rule), with kernels/ctc.h's rules in float64. The CPU twin is backend/cpu/ctc_loss.cpp.
// Memory: alpha is (N, T, 2S + 1) float64 (PyTorch's log_alpha has that shape in the input's dtype, so
// this is twice its size for float32), beta two rows per entry, and the rule (T, N, C) of the input's dtype.
#include <cstdint>

#include "tensorgrad/backend/cuda/kernels.cuh"
#include "tensorgrad/kernels/ctc.h"

namespace tg {
namespace cuda {
namespace detail {
namespace {

/// Threads per block: one per state (and per class), in whole warps, at most kBlock; a longer row is
/// walked in strides.
unsigned ctc_block(int64_t width) {
  const int64_t w = (std::max<int64_t>(width, 1) + 31) / 32 * 32;
  return static_cast<unsigned>(std::min<int64_t>(w, kBlock));
}

/// Records a bad label in the device error flag (the fields ctc_target_error reads, kErrCtcTarget).
__device__ void record_target_error(DeviceErrorFlag* flag, int64_t label, int64_t b, int64_t i, int64_t C,
                                    int64_t blank) {
  if (atomicCAS(&flag->code, 0, kErrCtcTarget) == 0) {
    flag->op = static_cast<int>(b);
    flag->dim = static_cast<int>(i);
    flag->pad = static_cast<int>(blank);
    flag->value = label;
    flag->bound = C;
  }
}

/// Entry blockIdx.x's operands: its lengths and labels, and lp_t(c) = lp[(t N + b) C + c] widened.
template <class T>
struct Entry {
  const T* lp;
  int64_t N, C, b, Tb, L, Sx;
  ctc_math::Labels lab;
  __device__ Entry(const T* lp_, const int64_t* targets, const int64_t* lengths, const CtcArgs& a)
      : lp(lp_), N(a.N), C(a.C), b(blockIdx.x), Tb(lengths[blockIdx.x]), L(lengths[a.N + blockIdx.x]),
        Sx(2 * L + 1), lab{targets + lengths[2 * a.N + blockIdx.x], a.blank} {}
  __device__ double at(int64_t t, int64_t c) const { return static_cast<double>(lp[(t * N + b) * C + c]); }
};

/// The forward of entry blockIdx.x: checks its labels (a bad one: the error flag and a NaN nll), then
/// alpha row by row (rows at alpha + (b T + t) W) and nll.
template <class T>
__global__ void ctc_alpha_kernel(const T* lp, const int64_t* targets, const int64_t* lengths, CtcArgs args,
                                 double* alpha, double* nll, DeviceErrorFlag* flag) {
  __shared__ int bad;
  const Entry<T> e(lp, targets, lengths, args);
  const int64_t W = 2 * args.S + 1, tid = threadIdx.x, step = blockDim.x;
  if (tid == 0) bad = 0;
  __syncthreads();
  for (int64_t i = tid; i < e.L; i += step) {
    const int64_t label = e.lab.target[i];
    if (!ctc_math::label_ok(label, e.C, args.blank)) {
      record_target_error(flag, label, e.b, i, e.C, args.blank);
      bad = 1;   // every writer stores 1
    }
  }
  __syncthreads();
  if (bad != 0) {   // the same for the whole block, as every branch below
    if (tid == 0) nll[e.b] = static_cast<double>(NAN);
    return;
  }
  if (e.Tb == 0) {
    if (tid == 0) nll[e.b] = ctc_math::nll_empty(e.L);
    return;
  }
  double* a = alpha + e.b * args.T * W;
  for (int64_t s = tid; s < e.Sx; s += step) a[s] = ctc_math::alpha_first(s, e.at(0, e.lab(s)));
  for (int64_t t = 1; t < e.Tb; ++t) {
    __syncthreads();   // row t - 1 complete
    for (int64_t s = tid; s < e.Sx; s += step) a[t * W + s] = ctc_math::alpha_step(a + (t - 1) * W, s, e.lab, e.at(t, e.lab(s)));
  }
  __syncthreads();
  if (tid == 0) nll[e.b] = ctc_math::nll_of(a + (e.Tb - 1) * W, e.Sx);
}

/// The gradient rule of entry blockIdx.x (Note [ctc_loss gradient]): rows t >= T_b (all rows of a
/// zeroed entry) 0, a NaN nll's rows NaN; else from t = T_b - 1 down: beta row t into beta's row t % 2
/// of the entry, then grad row t: every class's rule with lcab = -inf, then over it the classes of l'.
template <class T>
__global__ void ctc_grad_kernel(const T* lp, const int64_t* targets, const int64_t* lengths, CtcArgs args,
                                const double* alpha, const double* nll, double* beta, T* grad) {
  const Entry<T> e(lp, targets, lengths, args);
  const int64_t W = 2 * args.S + 1, N = args.N, C = e.C, tid = threadIdx.x, step = blockDim.x;
  const double n = nll[e.b], scale = ctc_math::scale(args.mean, e.L, N);
  const int64_t live = ctc_math::zeroed(args.zero_infinity, n) ? 0 : e.Tb;
  for (int64_t k = tid; k < (args.T - live) * C; k += step) grad[((live + k / C) * N + e.b) * C + k % C] = T(0);
  if (live == 0) return;
  if (n != n) {
    for (int64_t k = tid; k < live * C; k += step) grad[((k / C) * N + e.b) * C + k % C] = static_cast<T>(n);
    return;
  }
  const double* a = alpha + e.b * args.T * W;
  double* rows[2] = {beta + e.b * 2 * W, beta + e.b * 2 * W + W};
  for (int64_t t = e.Tb - 1; t >= 0; --t) {
    double* cur = rows[t % 2];
    for (int64_t s = tid; s < e.Sx; s += step) {
      const double l = e.at(t, e.lab(s));
      cur[s] = t == e.Tb - 1 ? ctc_math::beta_last(s, e.Sx, l) : ctc_math::beta_step(rows[(t + 1) % 2], s, e.Sx, e.lab, l);
    }
    __syncthreads();   // beta row t complete
    T* r = grad + (t * N + e.b) * C;
    for (int64_t c = tid; c < C; c += step) r[c] = static_cast<T>(ctc_math::grad_value(e.at(t, c), ctc_math::neg_inf(), n, scale));
    __syncthreads();   // the classes of l' overwrite their entries: the blank (j = 0), then each label's first occurrence
    for (int64_t j = tid; j <= e.L; j += step) {
      const int64_t i = j - 1;
      if (i >= 0 && !e.lab.first(i)) continue;
      const int64_t s0 = i < 0 ? 0 : 2 * i + 1, c = e.lab(s0);
      r[c] = static_cast<T>(ctc_math::grad_value(e.at(t, c), ctc_math::lcab(a + t * W, cur, e.lab, s0, e.Sx), n, scale));
    }
    // no sync needed here: step t - 1 writes beta row t - 1 (into the row step t read before its first
    // sync) and grad row t - 1; the row cur is overwritten only at step t - 2, after two more syncs
  }
}

}  // namespace

// Backend methods. Validation happened in ops/ctc_loss.cpp and prim/ctc_loss.cpp; the labels are
// checked by ctc_alpha_kernel.

void CudaBackend::ctc_loss(const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths,
                           const CtcArgs& args, const RawTensor& alpha, const RawTensor& nll) {
  TG_CHECK(args.N <= INT32_MAX, ShapeError, "ctc_loss: batch of ", args.N, " entries exceeds the CUDA grid");
  DeviceGuard guard(ctx_.device());
  dispatch_only<kFloat32, kFloat64>(log_probs.dtype(), "ctc_loss", [&](auto tag) {
    using T = decltype(tag);
    TG_LAUNCH(static_cast<unsigned>(args.N), ctc_block(2 * args.S + 1), 0, ctx_.stream(), ctc_alpha_kernel<T>)(
        log_probs.data<T>(), targets.data<int64_t>(), lengths.data<int64_t>(), args, alpha.data<double>(),
        nll.data<double>(), ctx_.error_flag());
    TG_CUDA_CHECK(cudaGetLastError());
  });
}

void CudaBackend::ctc_loss_backward(const RawTensor& log_probs, const RawTensor& targets, const RawTensor& lengths,
                                    const RawTensor& alpha, const RawTensor& nll, const CtcArgs& args,
                                    const RawTensor& beta, const RawTensor& grad) {
  TG_CHECK(args.N <= INT32_MAX, ShapeError, "ctc_loss_backward: batch of ", args.N, " entries exceeds the CUDA grid");
  DeviceGuard guard(ctx_.device());
  dispatch_only<kFloat32, kFloat64>(log_probs.dtype(), "ctc_loss_backward", [&](auto tag) {
    using T = decltype(tag);
    TG_LAUNCH(static_cast<unsigned>(args.N), ctc_block(std::max<int64_t>(2 * args.S + 1, args.C)), 0, ctx_.stream(),
              ctc_grad_kernel<T>)(log_probs.data<T>(), targets.data<int64_t>(), lengths.data<int64_t>(), args,
                                  alpha.data<double>(), nll.data<double>(), beta.data<double>(), grad.data<T>());
    TG_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
