// backend/cpu/attention.cpp: the CPU backend's fused attention (Backend::attention and
// attention_backward), the reference of the CUDA kernels: plain loops over host memory, one query
// row at a time, accumulating in opmath (float32 for float16/bfloat16). The ops use the composed
// path on the CPU (ops/attention.cpp, Note [Fused attention]); this is what the CUDA
// kernels (backend/cuda/attention.cu) compute, written to be read, and what tests compare them with.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "tensorgrad/backend/cpu/cpu_backend.h"
#include "tensorgrad/core/half.h"

namespace tg {
namespace cpu {
namespace {

/// The scores of query row i of batch b against every key: s (S) = scale q_i . k_j, then the causal
/// rule and the mask (-inf where a key is not attended). Sets s.
template <class T, class M>
void score_row(const T* q, const T* k, const AttentionArgs& a, int64_t b, int64_t i, std::vector<M>& s) {
  const T* qi = q + a.q_rows.at(b, i);
  const char* mask_base = nullptr;
  if (a.mask.defined()) {
    const int64_t off = (b / a.mask_inner) * a.mask_stride_outer + (b % a.mask_inner) * a.mask_stride_inner +
                        i * a.mask_stride_l;
    mask_base = static_cast<const char*>(a.mask.raw_data()) + off * static_cast<int64_t>(dtype_size(a.mask.dtype()));
  }
  for (int64_t j = 0; j < a.S; ++j) {
    const T* kj = k + a.k_rows.at(b, j);
    M dot = 0;
    for (int64_t e = 0; e < a.E; ++e) dot += static_cast<M>(qi[e]) * static_cast<M>(kj[e]);
    M v = static_cast<M>(a.scale) * dot;
    if (a.causal && j > i) v = -std::numeric_limits<M>::infinity();
    if (mask_base != nullptr) {
      if (a.mask.dtype() == kBool) {
        if (!reinterpret_cast<const bool*>(mask_base)[j * a.mask_stride_s]) v = -std::numeric_limits<M>::infinity();
      } else {
        v += static_cast<M>(reinterpret_cast<const T*>(mask_base)[j * a.mask_stride_s]);
      }
    }
    s[j] = v;
  }
}

template <class T>
void attention_ref(const RawTensor& qt, const RawTensor& kt, const RawTensor& vt, const AttentionArgs& a, const RawTensor& outt,
                   const RawTensor& lset) {
  using M = opmath_t<T>;
  const T *q = qt.data<T>(), *k = kt.data<T>(), *v = vt.data<T>();
  T* out = outt.data<T>();
  M* lse = lset.data<M>();
  std::vector<M> s(static_cast<std::size_t>(a.S)), o(static_cast<std::size_t>(a.Ev));
  for (int64_t b = 0; b < a.B; ++b)
    for (int64_t i = 0; i < a.L; ++i) {
      score_row<T, M>(q, k, a, b, i, s);
      M m = -std::numeric_limits<M>::infinity();
      for (M x : s) m = x > m ? x : m;
      T* oi = out + a.out_rows.at(b, i);
      if (m == -std::numeric_limits<M>::infinity()) {   // every key masked: out 0, lse +inf (Note [Fused attention])
        lse[b * a.L + i] = std::numeric_limits<M>::infinity();
        for (int64_t d = 0; d < a.Ev; ++d) oi[d] = static_cast<T>(M(0));
        continue;
      }
      M l = 0;
      for (M& x : s) l += (x = std::exp(x - m));   // s becomes exp(s - m)
      std::fill(o.begin(), o.end(), M(0));
      for (int64_t j = 0; j < a.S; ++j) {
        const T* vj = v + a.v_rows.at(b, j);
        for (int64_t d = 0; d < a.Ev; ++d) o[d] += s[j] * static_cast<M>(vj[d]);
      }
      for (int64_t d = 0; d < a.Ev; ++d) oi[d] = static_cast<T>(o[d] / l);   // out = sum_j p_j v_j, p = exp(s - m) / l
      lse[b * a.L + i] = m + std::log(l);
    }
}

template <class T>
void attention_backward_ref(const RawTensor& qt, const RawTensor& kt, const RawTensor& vt, const RawTensor& outt,
                            const RawTensor& lset, const RawTensor& doutt, const AttentionArgs& a, const RawTensor& dqt,
                            const RawTensor& dkt, const RawTensor& dvt) {
  using M = opmath_t<T>;
  const T *q = qt.data<T>(), *k = kt.data<T>(), *v = vt.data<T>(), *out = outt.data<T>(), *dout = doutt.data<T>();
  const M* lse = lset.data<M>();
  std::vector<M> s(static_cast<std::size_t>(a.S)), dq(static_cast<std::size_t>(a.E));
  std::vector<M> dk(static_cast<std::size_t>(a.S * a.E)), dv(static_cast<std::size_t>(a.S * a.Ev));
  const M scale = static_cast<M>(a.scale);
  for (int64_t b = 0; b < a.B; ++b) {
    std::fill(dk.begin(), dk.end(), M(0));
    std::fill(dv.begin(), dv.end(), M(0));
    for (int64_t i = 0; i < a.L; ++i) {
      score_row<T, M>(q, k, a, b, i, s);
      const T *qi = q + a.q_rows.at(b, i), *oi = out + a.out_rows.at(b, i), *gi = dout + a.dout_rows.at(b, i);
      const M row_lse = lse[b * a.L + i];
      M D = 0;   // D_i = dout_i . out_i = sum_j p_ij dp_ij
      for (int64_t d = 0; d < a.Ev; ++d) D += static_cast<M>(gi[d]) * static_cast<M>(oi[d]);
      std::fill(dq.begin(), dq.end(), M(0));
      for (int64_t j = 0; j < a.S; ++j) {
        // p_ij recomputed from the saved log-sum-exp; 0 for a masked key (every key of a fully masked
        // row, whose out and so D_i are 0: its gradients are 0)
        const M p = s[j] == -std::numeric_limits<M>::infinity() ? M(0) : std::exp(s[j] - row_lse);
        const T* vj = v + a.v_rows.at(b, j);
        const T* kj = k + a.k_rows.at(b, j);
        M dp = 0;   // dp_ij = dout_i . v_j
        for (int64_t d = 0; d < a.Ev; ++d) {
          dp += static_cast<M>(gi[d]) * static_cast<M>(vj[d]);
          dv[j * a.Ev + d] += p * static_cast<M>(gi[d]);   // dv_j += p_ij dout_i
        }
        const M ds = p * (dp - D) * scale;   // d(scores)_ij = p_ij (dp_ij - D_i), times scale for q k^T
        for (int64_t e = 0; e < a.E; ++e) {
          dq[e] += ds * static_cast<M>(kj[e]);             // dq_i += ds_ij k_j
          dk[j * a.E + e] += ds * static_cast<M>(qi[e]);   // dk_j += ds_ij q_i
        }
      }
      T* dqi = dqt.data<T>() + (b * a.L + i) * a.E;
      for (int64_t e = 0; e < a.E; ++e) dqi[e] = static_cast<T>(dq[e]);
    }
    T* dkb = dkt.data<T>() + b * a.S * a.E;
    T* dvb = dvt.data<T>() + b * a.S * a.Ev;
    for (int64_t x = 0; x < a.S * a.E; ++x) dkb[x] = static_cast<T>(dk[x]);
    for (int64_t x = 0; x < a.S * a.Ev; ++x) dvb[x] = static_cast<T>(dv[x]);
  }
}

}  // namespace

void CpuBackend::attention(const RawTensor& q, const RawTensor& k, const RawTensor& v, const AttentionArgs& args, const RawTensor& out,
                           const RawTensor& lse) {
  dispatch_floating(q.dtype(), "scaled_dot_product_attention",
                    [&](auto t) { attention_ref<decltype(t)>(q, k, v, args, out, lse); });
}

void CpuBackend::attention_backward(const RawTensor& q, const RawTensor& k, const RawTensor& v, const RawTensor& out,
                                 const RawTensor& lse, const RawTensor& dout, const AttentionArgs& args, const RawTensor& dq,
                                 const RawTensor& dk, const RawTensor& dv) {
  dispatch_floating(q.dtype(), "scaled_dot_product_attention", [&](auto t) {
    attention_backward_ref<decltype(t)>(q, k, v, out, lse, dout, args, dq, dk, dv);
  });
}

}  // namespace cpu
}  // namespace tg
