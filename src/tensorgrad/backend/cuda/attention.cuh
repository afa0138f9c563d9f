// backend/cuda/attention.cuh: what the two families of fused attention kernels share: the geometry
// they receive (AttentionArgs as kernel parameters) and the score rule (scale, causal, mask). The
// CUDA-core kernels are backend/cuda/attention.cu, the tensor-core ones backend/cuda/attention_mma.cu;
// Note [Attention providers] in the latter says which runs when. Internal to backend/cuda/.
#pragma once
#include <cmath>
#include <cstdint>

#include "tensorgrad/backend/cuda/kernels.cuh"

namespace tg {
namespace cuda {
namespace detail {
namespace attention {

/// AttentionArgs as kernel parameters: the mask as a pointer and its strides.
struct Geometry {
  int64_t B, L, S, E, Ev;
  double scale;
  bool causal;
  int mask_kind;   // 0 none, 1 bool (false: not attended), 2 additive of the inputs' dtype
  const void* mask;
  int64_t mask_inner, mask_stride_outer, mask_stride_inner, mask_stride_l, mask_stride_s;
  AttentionRows q, k, v, out, dout;   // where each operand's rows lie (Note [Attention operands in place])
};

template <class M>
__device__ __forceinline__ M minus_inf() {
  return -M(INFINITY);
}

/// The score of query i against key j of batch b from their dot product: scale dot, then the causal
/// rule and the mask (-inf where key j is not attended).
template <class T, class M>
__device__ __forceinline__ M score(const Geometry& g, M dot, int64_t b, int64_t i, int64_t j) {
  M s = static_cast<M>(g.scale) * dot;
  if (g.causal && j > i) return minus_inf<M>();
  if (g.mask_kind != 0) {
    const int64_t off = (b / g.mask_inner) * g.mask_stride_outer + (b % g.mask_inner) * g.mask_stride_inner +
                        i * g.mask_stride_l + j * g.mask_stride_s;
    if (g.mask_kind == 1) {
      if (!static_cast<const bool*>(g.mask)[off]) return minus_inf<M>();
    } else {
      s += static_cast<M>(static_cast<const T*>(g.mask)[off]);
    }
  }
  return s;
}

/// p = exp(s - lse) for a score s, 0 where the key is masked (every key of a fully masked row, whose lse
/// is +inf).
template <class M>
__device__ __forceinline__ M prob(M s, M row_lse) {
  return s == minus_inf<M>() ? M(0) : texp(s - row_lse);
}

inline Geometry geometry(const AttentionArgs& a) {
  Geometry g{a.B, a.L, a.S, a.E, a.Ev, a.scale, a.causal, 0, nullptr, a.mask_inner, a.mask_stride_outer,
             a.mask_stride_inner, a.mask_stride_l, a.mask_stride_s, a.q_rows, a.k_rows, a.v_rows, a.out_rows,
             a.dout_rows};
  if (a.mask.defined()) {
    g.mask_kind = a.mask.dtype() == kBool ? 1 : 2;
    g.mask = a.mask.raw_data();
  }
  return g;
}

}  // namespace attention

/// Backend::attention and attention_backward on the tensor cores (backend/cuda/attention_mma.cu), for
/// float32, float16 and bfloat16 with head dims up to 128; lse and the backward's buffers are float32.
void attention_mma(DeviceContext& ctx, const RawTensor& q, const RawTensor& k, const RawTensor& v,
                   const AttentionArgs& a, const RawTensor& out, const RawTensor& lse);
void attention_mma_backward(DeviceContext& ctx, const RawTensor& q, const RawTensor& k, const RawTensor& v,
                            const RawTensor& out, const RawTensor& lse, const RawTensor& dout, const AttentionArgs& a,
                            const RawTensor& dq, const RawTensor& dk, const RawTensor& dv);
}  // namespace detail
}  // namespace cuda
}  // namespace tg
