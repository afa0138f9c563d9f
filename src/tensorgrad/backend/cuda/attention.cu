// backend/cuda/attention.cu: the fused scaled-dot-product attention of the CUDA Backend (Note [Fused
// attention] in ops/attention.cpp). The forward streams tiles of 32 keys through shared memory and
// keeps an online softmax per query row (running max, running sum, rescaled output), so the (L, S)
// scores never reach global memory; it saves each row's log-sum-exp. The backward recomputes the
// probabilities from q, k and that log-sum-exp in two kernels without atomics: one per block of
// query rows for dq, one per block of key rows for dk and dv. float16/bfloat16 accumulate in float32.
// The host reference of the same arithmetic is backend/cpu/attention.cpp. The tensor-core kernels of
// the same computation are attention_mma.cu; Note [Attention providers] there says which family runs.
#include <cmath>
#include <cstdint>

#include "tensorgrad/backend/cuda/attention.cuh"
#include "tensorgrad/backend/cuda/kernels.cuh"
#include "tensorgrad/core/half.h"

namespace tg {
namespace cuda {
namespace detail {
namespace {

using namespace attention;   // NOLINT(google-build-using-namespace): Geometry, score, prob

// Note [Attention kernel geometry]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A block of kThreads = 4 warps owns kRows = 8 rows of the "row side" (query rows in the forward and
// in the dq kernel, key rows in the dk/dv kernel), two per warp, kept in shared memory. It walks the
// other side in tiles of kTile = 32 rows, one per lane: lane j computes the score of its row against
// the warp's current row-side row, the warp combines the 32 scores with shuffles (max and sum), then
// every lane accumulates the columns d = lane + 32 c (c < kMaxDim / 32) of its output rows in
// registers from the tile's rows, each tile row's weight broadcast by a shuffle. Tiles are padded by
// one element per row so that 32 lanes reading 32 different rows at one column hit 32 banks. The
// tiles live in static shared memory sized for the widest row, kMaxDim (128 for float32 and the
// 16-bit types, 64 for float64: 37-42 KB per block either way, under the 48 KB of static shared
// memory); wider heads take the composed path (ops/attention.cpp). Loop bounds depend on the block
// only, so every lane reaches every barrier and shuffle.
constexpr int kWarpsPerBlock = 4;
constexpr int kThreads = 32 * kWarpsPerBlock;
constexpr int kRowsPerWarp = 2;
constexpr int kRows = kWarpsPerBlock * kRowsPerWarp;
constexpr int kTile = 32;

template <class M>
struct MaxDim {
  static constexpr int value = sizeof(M) == 4 ? 128 : 64;
};

struct MaxOp {
  template <class A>
  __device__ A operator()(A a, A b) const {
    return a > b ? a : b;
  }
};
struct SumOp {
  template <class A>
  __device__ A operator()(A a, A b) const {
    return a + b;
  }
};

/// dst[r][c] (rows of width `width`, row pitch P) = row (first + r) of batch entry b of src (laid out
/// as `rows_of` says), columns c < width, as M; 0 for rows at or beyond `end`. All threads of the
/// block take part.
template <class T, class M, int P>
__device__ __forceinline__ void load_rows(M (*dst)[P], int rows, const T* src, const AttentionRows& rows_of, int64_t b,
                                          int64_t first, int64_t end, int64_t width) {
  for (int64_t x = threadIdx.x; x < rows * width; x += kThreads) {
    const int64_t r = x / width, c = x % width;
    dst[r][c] = first + r < end ? static_cast<M>(src[rows_of.at(b, first + r) + c]) : M(0);
  }
}

/// out (B, L, Ev) and lse (B, L) of a block of kRows query rows: see Note [Attention kernel geometry].
template <class T>
__global__ void attention_forward_kernel(const T* q, const T* k, const T* v, T* out, opmath_t<T>* lse, Geometry g,
                                         int64_t row_blocks) {
  using M = opmath_t<T>;
  constexpr int D = MaxDim<M>::value, C = D / 32;
  __shared__ M qs[kRows][D];
  __shared__ M ks[kTile][D + 1];
  __shared__ M vs[kTile][D];
  const int64_t b = blockIdx.x / row_blocks, i0 = (blockIdx.x % row_blocks) * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  load_rows<T, M, D>(qs, kRows, q, g.q, b, i0, g.L, g.E);
  M m[kRowsPerWarp], l[kRowsPerWarp], o[kRowsPerWarp][C];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    m[rr] = minus_inf<M>();
    l[rr] = M(0);
#pragma unroll
    for (int c = 0; c < C; ++c) o[rr][c] = M(0);
  }
  // with is_causal, keys after the block's last row are masked for all of its rows
  const int64_t s_end = g.causal ? (i0 + kRows < g.S ? i0 + kRows : g.S) : g.S;
  for (int64_t j0 = 0; j0 < s_end; j0 += kTile) {
    __syncthreads();   // the previous tile is consumed (the first time: qs is written)
    load_rows<T, M, D + 1>(ks, kTile, k, g.k, b, j0, g.S, g.E);
    load_rows<T, M, D>(vs, kTile, v, g.v, b, j0, g.S, g.Ev);
    __syncthreads();
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr;
      const int64_t i = i0 + r, j = j0 + lane;
      M s = minus_inf<M>();
      if (i < g.L && j < g.S) {
        M dot = M(0);
        for (int64_t e = 0; e < g.E; ++e) dot += qs[r][e] * ks[lane][e];
        s = score<T, M>(g, dot, b, i, j);
      }
      const M m_new = MaxOp()(m[rr], warp_allreduce(s, MaxOp()));
      if (m_new == minus_inf<M>()) continue;   // every key so far masked (the same in every lane)
      const M alpha = texp(m[rr] - m_new);       // rescales what was summed under the old max (0 from -inf)
      const M p = texp(s - m_new);               // 0 for masked keys
      l[rr] = l[rr] * alpha + warp_allreduce(p, SumOp());
#pragma unroll
      for (int c = 0; c < C; ++c) o[rr][c] *= alpha;
      for (int jj = 0; jj < kTile; ++jj) {
        const M pj = shfl_idx(p, jj);
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const int64_t d = lane + 32 * c;
          if (d < g.Ev) o[rr][c] += pj * vs[jj][d];
        }
      }
      m[rr] = m_new;
    }
  }
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t i = i0 + warp * kRowsPerWarp + rr;
    if (i >= g.L) continue;
    T* oi = out + g.out.at(b, i);
    // every key masked (l is at least 1 once any score is finite): out 0 and lse +inf, so that the
    // backward's exp(s - lse) is 0 for each of its keys (Note [Fused attention])
    const bool empty = l[rr] == M(0);
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int64_t d = lane + 32 * c;
      if (d < g.Ev) oi[d] = static_cast<T>(empty ? M(0) : o[rr][c] / l[rr]);
    }
    if (lane == 0) lse[b * g.L + i] = empty ? M(INFINITY) : m[rr] + tlog(l[rr]);
  }
}

/// dq (B, L, E) of a block of kRows query rows, walking tiles of keys:
/// dq_i = scale sum_j p_ij (dout_i . v_j - delta_i) k_j. Computes delta_i = dout_i . out_i, the row term
/// of the softmax backward, for its rows first and stores it for attention_dkv_kernel, queued after it
/// (one launch fewer than a pass of its own). Sets dq and delta (B L).
template <class T>
__global__ void attention_dq_kernel(const T* q, const T* k, const T* v, const T* dout, const T* out,
                                    const opmath_t<T>* lse, opmath_t<T>* delta, T* dq, Geometry g, int64_t row_blocks) {
  using M = opmath_t<T>;
  constexpr int D = MaxDim<M>::value, C = D / 32;
  __shared__ M qs[kRows][D];
  __shared__ M gs[kRows][D];
  __shared__ M ks[kTile][D + 1];
  __shared__ M vs[kTile][D + 1];
  const int64_t b = blockIdx.x / row_blocks, i0 = (blockIdx.x % row_blocks) * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  load_rows<T, M, D>(qs, kRows, q, g.q, b, i0, g.L, g.E);
  load_rows<T, M, D>(gs, kRows, dout, g.dout, b, i0, g.L, g.Ev);
  M row_lse[kRowsPerWarp], row_delta[kRowsPerWarp], acc[kRowsPerWarp][C];
  __syncthreads();   // gs is written
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int r = warp * kRowsPerWarp + rr;
    const int64_t i = i0 + r;
    M part = M(0);   // this lane's share of dout_i . out_i
    if (i < g.L) {
      const T* orow = out + g.out.at(b, i);
      for (int64_t d = lane; d < g.Ev; d += 32) part += gs[r][d] * static_cast<M>(orow[d]);
    }
    row_delta[rr] = warp_allreduce(part, SumOp());
    if (i < g.L && lane == 0) delta[b * g.L + i] = row_delta[rr];
    row_lse[rr] = i < g.L ? lse[b * g.L + i] : M(0);
#pragma unroll
    for (int c = 0; c < C; ++c) acc[rr][c] = M(0);
  }
  const M scale = static_cast<M>(g.scale);
  const int64_t s_end = g.causal ? (i0 + kRows < g.S ? i0 + kRows : g.S) : g.S;
  for (int64_t j0 = 0; j0 < s_end; j0 += kTile) {
    __syncthreads();
    load_rows<T, M, D + 1>(ks, kTile, k, g.k, b, j0, g.S, g.E);
    load_rows<T, M, D + 1>(vs, kTile, v, g.v, b, j0, g.S, g.Ev);
    __syncthreads();
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr;
      const int64_t i = i0 + r, j = j0 + lane;
      M ds = M(0);
      if (i < g.L && j < g.S) {
        M dot = M(0), dp = M(0);
        for (int64_t e = 0; e < g.E; ++e) dot += qs[r][e] * ks[lane][e];
        for (int64_t d = 0; d < g.Ev; ++d) dp += gs[r][d] * vs[lane][d];
        const M p = prob(score<T, M>(g, dot, b, i, j), row_lse[rr]);
        ds = p * (dp - row_delta[rr]) * scale;   // d(q k^T)_ij
      }
      for (int jj = 0; jj < kTile; ++jj) {
        const M dsj = shfl_idx(ds, jj);
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const int64_t e = lane + 32 * c;
          if (e < g.E) acc[rr][c] += dsj * ks[jj][e];
        }
      }
    }
  }
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t i = i0 + warp * kRowsPerWarp + rr;
    if (i >= g.L) continue;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int64_t e = lane + 32 * c;
      if (e < g.E) dq[(b * g.L + i) * g.E + e] = static_cast<T>(acc[rr][c]);
    }
  }
}

/// dk (B, S, E) and dv (B, S, Ev) of a block of kRows key rows, walking tiles of queries:
/// dv_j = sum_i p_ij dout_i, dk_j = scale sum_i p_ij (dout_i . v_j - delta_i) q_i. Sets both.
template <class T>
__global__ void attention_dkv_kernel(const T* q, const T* k, const T* v, const T* dout, const opmath_t<T>* lse,
                                     const opmath_t<T>* delta, T* dk, T* dv, Geometry g, int64_t row_blocks) {
  using M = opmath_t<T>;
  constexpr int D = MaxDim<M>::value, C = D / 32;
  __shared__ M ks[kRows][D];
  __shared__ M vs[kRows][D];
  __shared__ M qs[kTile][D + 1];
  __shared__ M gs[kTile][D + 1];
  __shared__ M tile_lse[kTile];
  __shared__ M tile_delta[kTile];
  const int64_t b = blockIdx.x / row_blocks, j0 = (blockIdx.x % row_blocks) * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  load_rows<T, M, D>(ks, kRows, k, g.k, b, j0, g.S, g.E);
  load_rows<T, M, D>(vs, kRows, v, g.v, b, j0, g.S, g.Ev);
  M dk_acc[kRowsPerWarp][C], dv_acc[kRowsPerWarp][C];
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr)
#pragma unroll
    for (int c = 0; c < C; ++c) dk_acc[rr][c] = dv_acc[rr][c] = M(0);
  const M scale = static_cast<M>(g.scale);
  // with is_causal, queries before the block's first key attend none of its keys
  const int64_t i_begin = g.causal ? j0 : 0;
  for (int64_t i0 = i_begin; i0 < g.L; i0 += kTile) {
    __syncthreads();
    load_rows<T, M, D + 1>(qs, kTile, q, g.q, b, i0, g.L, g.E);
    load_rows<T, M, D + 1>(gs, kTile, dout, g.dout, b, i0, g.L, g.Ev);
    if (threadIdx.x < kTile) {
      const int64_t i = i0 + threadIdx.x;
      tile_lse[threadIdx.x] = i < g.L ? lse[b * g.L + i] : M(0);
      tile_delta[threadIdx.x] = i < g.L ? delta[b * g.L + i] : M(0);
    }
    __syncthreads();
#pragma unroll
    for (int rr = 0; rr < kRowsPerWarp; ++rr) {
      const int r = warp * kRowsPerWarp + rr;
      const int64_t j = j0 + r, i = i0 + lane;
      M p = M(0), ds = M(0);
      if (j < g.S && i < g.L) {
        M dot = M(0), dp = M(0);
        for (int64_t e = 0; e < g.E; ++e) dot += qs[lane][e] * ks[r][e];
        for (int64_t d = 0; d < g.Ev; ++d) dp += gs[lane][d] * vs[r][d];
        p = prob(score<T, M>(g, dot, b, i, j), tile_lse[lane]);
        ds = p * (dp - tile_delta[lane]) * scale;
      }
      for (int ii = 0; ii < kTile; ++ii) {
        const M pi = shfl_idx(p, ii), dsi = shfl_idx(ds, ii);
#pragma unroll
        for (int c = 0; c < C; ++c) {
          const int64_t d = lane + 32 * c;
          if (d < g.Ev) dv_acc[rr][c] += pi * gs[ii][d];
          if (d < g.E) dk_acc[rr][c] += dsi * qs[ii][d];
        }
      }
    }
  }
#pragma unroll
  for (int rr = 0; rr < kRowsPerWarp; ++rr) {
    const int64_t j = j0 + warp * kRowsPerWarp + rr;
    if (j >= g.S) continue;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int64_t d = lane + 32 * c;
      if (d < g.E) dk[(b * g.S + j) * g.E + d] = static_cast<T>(dk_acc[rr][c]);
      if (d < g.Ev) dv[(b * g.S + j) * g.Ev + d] = static_cast<T>(dv_acc[rr][c]);
    }
  }
}

/// Error unless the kernels' tiles hold rows of E and Ev elements of accumulator M.
template <class M>
void check_width(const AttentionArgs& a) {
  TG_CHECK(a.E <= MaxDim<M>::value && a.Ev <= MaxDim<M>::value, Error,
           "scaled_dot_product_attention: the fused CUDA kernels take head dims up to ", MaxDim<M>::value,
           " in this dtype, got E = ", a.E, " and Ev = ", a.Ev, " (the op sends wider heads to the composed path)");
}

}  // namespace

void CudaBackend::attention(const RawTensor& q, const RawTensor& k, const RawTensor& v, const AttentionArgs& a,
                            const RawTensor& out, const RawTensor& lse) {
  if (out.numel() == 0) return;
  DeviceGuard guard(ctx_.device());
  if (attention_kernels(ctx_.major, q.dtype()).mma) {
    check_width<float>(a);
    attention_mma(ctx_, q, k, v, a, out, lse);
    return;
  }
  dispatch_floating(q.dtype(), "scaled_dot_product_attention", [&](auto t) {
    using T = decltype(t);
    using M = opmath_t<T>;
    check_width<M>(a);
    const int64_t row_blocks = (a.L + kRows - 1) / kRows;
    TG_LAUNCH(static_cast<unsigned>(a.B * row_blocks), kThreads, 0, ctx_.stream(), attention_forward_kernel<T>)(
        q.data<T>(), k.data<T>(), v.data<T>(), out.data<T>(), lse.data<M>(), geometry(a), row_blocks);
    TG_CUDA_CHECK(cudaGetLastError());
  });
}

void CudaBackend::attention_backward(const RawTensor& q, const RawTensor& k, const RawTensor& v, const RawTensor& out,
                                     const RawTensor& lse, const RawTensor& dout, const AttentionArgs& a, const RawTensor& dq,
                                     const RawTensor& dk, const RawTensor& dv) {
  DeviceGuard guard(ctx_.device());
  if (attention_kernels(ctx_.major, q.dtype()).mma) {
    check_width<float>(a);
    attention_mma_backward(ctx_, q, k, v, out, lse, dout, a, dq, dk, dv);
    return;
  }
  dispatch_floating(q.dtype(), "scaled_dot_product_attention", [&](auto t) {
    using T = decltype(t);
    using M = opmath_t<T>;
    check_width<M>(a);
    const Geometry g = geometry(a);
    const RawTensor delta = RawTensor::empty({a.B, a.L}, lse.dtype(), q.device());   // written by the dq kernel
    const int64_t q_blocks = (a.L + kRows - 1) / kRows, k_blocks = (a.S + kRows - 1) / kRows;
    if (a.B * q_blocks > 0) {
      TG_LAUNCH(static_cast<unsigned>(a.B * q_blocks), kThreads, 0, ctx_.stream(), attention_dq_kernel<T>)(
          q.data<T>(), k.data<T>(), v.data<T>(), dout.data<T>(), out.data<T>(), lse.data<M>(), delta.data<M>(),
          dq.data<T>(), g, q_blocks);
      TG_CUDA_CHECK(cudaGetLastError());
    }
    if (a.B * k_blocks > 0) {
      TG_LAUNCH(static_cast<unsigned>(a.B * k_blocks), kThreads, 0, ctx_.stream(), attention_dkv_kernel<T>)(
          q.data<T>(), k.data<T>(), v.data<T>(), dout.data<T>(), lse.data<M>(), delta.data<M>(), dk.data<T>(),
          dv.data<T>(), g, k_blocks);
      TG_CUDA_CHECK(cudaGetLastError());
    }
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
