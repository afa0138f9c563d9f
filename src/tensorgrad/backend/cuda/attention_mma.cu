// backend/cuda/attention_mma.cu: the tensor-core kernels of the fused scaled-dot-product attention
// (float32, float16, bfloat16), the same computation as the CUDA-core kernels of attention.cu (online
// softmax forward saving each row's log-sum-exp; a dq kernel and a dk/dv kernel that recompute the
// probabilities, without atomics), with every product on mma.sync (backend/cuda/mma.cuh). Which of
// the two families runs is Note [Attention providers].
#include <cmath>
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "tensorgrad/backend/cuda/attention.cuh"
#include "tensorgrad/backend/cuda/kernels.cuh"
#include "tensorgrad/backend/cuda/mma.cuh"
#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/core/half.h"

namespace tg {
namespace cuda {
namespace detail {

// Note [Attention providers]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Two kernel families compute the fused attention on CUDA. The CUDA-core kernels (attention.cu) run
// every floating dtype on any architecture; they are the reference the tensor-core ones are tested
// against and the fallback. The tensor-core kernels (this file) run float32 as 3xTF32 (Note [3xTF32]:
// float32 accuracy) and float16/bfloat16 as 16-bit mmas with float32 accumulation, where every operand
// that is a computed float (probabilities, score gradients) is split into two 16-bit parts (warp_gemm's
// SplitA), so both families agree to float32-accumulation tolerances. The tensor cores are chosen when
// the dtype is float32, float16 or bfloat16, the device has compute capability 8.0 or newer (mma.sync
// for TF32 and bfloat16) and the kernels were compiled for such a target (a binary built only for
// sm_75 would JIT its compute_75 PTX, which has no mma: cudaFuncGetAttributes tells); float64 always
// takes the CUDA cores. TG_CUDA_ATTENTION overrides: `cuda-cores` forces the CUDA-core kernels, `mma`
// demands the tensor cores for the dtypes they have (an Error where the device or the build cannot run
// them), `auto` (or unset) chooses as above.
// tg::cuda::info() names the choice per device. cuDNN's SDPA graphs are not a provider yet.
//
// Note [Tensor-core attention tiles]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A warp owns a stripe of 16 rows (the mma's M) of the "row side": query rows in the forward and the
// dq kernel, key rows in the dk/dv kernel; a block of kWarps warps walks the other side in tiles of
// kTile rows. Operands sit in static shared memory as float (a 16-bit value converts back exactly),
// rows padded by 4 floats so that the fragment loads of a warp (8 rows x 4 columns) hit 32 banks; head
// dims are padded with zeros to the kernel's D, 64 or 128, and rows past the end are zeros that the
// score rule masks. The products: scores S = Q K^T and dP = dO V^T read the tiles directly; P V, dS K,
// P^T dO and dS^T Q take the computed factor through a per-warp staging tile (a C fragment is not an A
// fragment). Per-warp scalars of a row (running max, sum) live in the 4 lanes that hold it and combine
// with two shuffles. The sizes keep each block under the 48 KB of static shared memory (36-44 KB):
// D = 64: 2 warps, tiles of 32; D = 128: 1 warp, tiles of 16. They are chosen for correctness first;
// the GPU benchmark (tools/gpu_check.sh, bench stage) is where they are to be tuned. Every loop over a
// fragment array is unrolled (#pragma unroll): an array indexed by a rolled loop's counter lives in
// local memory, and nvcc leaves long loop bodies (the 16-bit products') rolled on its own. The test
// cuda_kernels_in_registers_* (tests/CMakeLists.txt) has ptxas fail on local memory or spills, for
// these kernels and the CUDA-core ones of attention.cu.

namespace {

using namespace attention;   // NOLINT(google-build-using-namespace): Geometry, score, prob
using mma::Precision;

template <int D>
struct Tiles;
template <>
struct Tiles<64> {
  static constexpr int kWarps = 2, kTile = 32;
};
template <>
struct Tiles<128> {
  static constexpr int kWarps = 1, kTile = 16;
};
constexpr int kStripe = 16;   // rows of one warp: the mma's M
constexpr int kPad = 4;

/// The precision of products between input values (q, k, v, dout): 16-bit mmas are exact on them.
template <class T>
struct InputPrecision {
  static constexpr Precision value = Precision::Tf32x3;
};
template <>
struct InputPrecision<Half> {
  static constexpr Precision value = Precision::F16;
};
template <>
struct InputPrecision<BFloat16> {
  static constexpr Precision value = Precision::Bf16;
};

__device__ __forceinline__ int round_up(int64_t x, int m) { return static_cast<int>((x + m - 1) / m * m); }

/// dst[r][c] (r < rows, c < D) = column c of row (first + r) of batch entry b of src as float; 0 for
/// rows at or past `end` and columns at or past `width`. All threads of the block take part.
template <class T, int D, int P>
__device__ __forceinline__ void load_tile(float (*dst)[P], int rows, const T* src, const AttentionRows& rows_of,
                                          int64_t b, int64_t first, int64_t end, int64_t width) {
  for (int x = static_cast<int>(threadIdx.x); x < rows * D; x += static_cast<int>(blockDim.x)) {
    const int r = x / D, c = x % D;
    dst[r][c] = first + r < end && c < width ? static_cast<float>(src[rows_of.at(b, first + r) + c]) : 0.0f;
  }
}

/// The other three lanes of a row's quad (lanes 4g .. 4g + 3 hold row g and g + 8 of a C fragment).
struct QuadMax {
  __device__ float operator()(float v) const {
    const int lane = static_cast<int>(threadIdx.x % 32);
    v = fmaxf(v, __shfl_sync(0xffffffffu, v, lane ^ 1));
    return fmaxf(v, __shfl_sync(0xffffffffu, v, lane ^ 2));
  }
};
struct QuadSum {
  __device__ float operator()(float v) const {
    const int lane = static_cast<int>(threadIdx.x % 32);
    v += __shfl_sync(0xffffffffu, v, lane ^ 1);
    return v + __shfl_sync(0xffffffffu, v, lane ^ 2);
  }
};

/// out and lse of a block of kWarps stripes of query rows: Note [Tensor-core attention tiles].
template <class T, int D>
__global__ void attention_mma_forward_kernel(const T* q, const T* k, const T* v, T* out, float* lse, Geometry g,
                                             int64_t row_blocks) {
  constexpr int W = Tiles<D>::kWarps, KT = Tiles<D>::kTile, R = W * kStripe, LD = D + kPad, PL = KT + kPad;
  constexpr Precision PI = InputPrecision<T>::value;
  __shared__ float qs[R][LD];
  __shared__ float ks[KT][LD];
  __shared__ float vs[KT][LD];
  __shared__ float ps[W][kStripe][PL];
  const int64_t b = blockIdx.x / row_blocks, i0 = (blockIdx.x % row_blocks) * R;
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int ek = round_up(g.E, mma::Policy<PI>::kK);
  load_tile<T, D, LD>(qs, R, q, g.q, b, i0, g.L, g.E);
  float m[2] = {minus_inf<float>(), minus_inf<float>()}, l[2] = {0.0f, 0.0f};
  float o[D / 8][4] = {};
  const int64_t s_end = g.causal ? (i0 + R < g.S ? i0 + R : g.S) : g.S;
  for (int64_t j0 = 0; j0 < s_end; j0 += KT) {
    __syncthreads();   // the previous tiles are consumed (the first time: qs is written)
    load_tile<T, D, LD>(ks, KT, k, g.k, b, j0, g.S, g.E);
    load_tile<T, D, LD>(vs, KT, v, g.v, b, j0, g.S, g.Ev);
    __syncthreads();
    float s[KT / 8][4] = {};
    mma::warp_gemm<PI, KT / 8>(s, &qs[warp * kStripe][0], LD, 1, &ks[0][0], 1, LD, ek);
    float mx[2] = {minus_inf<float>(), minus_inf<float>()};
#pragma unroll
    for (int n = 0; n < KT / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const mma::Pos p = mma::acc_pos(lane, e);
        const int64_t i = i0 + warp * kStripe + p.row, j = j0 + 8 * n + p.col;
        s[n][e] = i < g.L && j < g.S ? score<T, float>(g, s[n][e], b, i, j) : minus_inf<float>();
        mx[e / 2] = fmaxf(mx[e / 2], s[n][e]);
      }
    float alpha[2], m_new[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      m_new[h] = fmaxf(m[h], QuadMax()(mx[h]));
      // every key so far masked: nothing to rescale; otherwise exp(-inf) = 0 drops an empty past
      alpha[h] = m_new[h] == minus_inf<float>() ? 1.0f : expf(m[h] - m_new[h]);
    }
    float sum[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < KT / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int h = e / 2;
        const float p = s[n][e] == minus_inf<float>() ? 0.0f : expf(s[n][e] - m_new[h]);
        sum[h] += p;
        const mma::Pos at = mma::acc_pos(lane, e);
        ps[warp][at.row][8 * n + at.col] = p;
      }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l[h] = l[h] * alpha[h] + QuadSum()(sum[h]);
      m[h] = m_new[h];
    }
#pragma unroll
    for (auto& f : o)
#pragma unroll
      for (int e = 0; e < 4; ++e) f[e] *= alpha[e / 2];
    __syncwarp();   // the stripe's probabilities are staged
    mma::warp_gemm<PI, D / 8, true>(o, &ps[warp][0][0], PL, 1, &vs[0][0], LD, 1, KT);
  }
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const mma::Pos p = mma::acc_pos(lane, e);
      const int64_t i = i0 + warp * kStripe + p.row, d = 8 * n + p.col;
      if (i >= g.L || d >= g.Ev) continue;
      // every key masked: out 0 and lse +inf (Note [Fused attention])
      const float row_l = l[e / 2];
      out[g.out.at(b, i) + d] = static_cast<T>(row_l == 0.0f ? 0.0f : o[n][e] / row_l);
    }
  if (lane % 4 == 0)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t i = i0 + warp * kStripe + lane / 4 + 8 * h;
      if (i < g.L) lse[b * g.L + i] = l[h] == 0.0f ? INFINITY : m[h] + logf(l[h]);
    }
}

/// dq of a block of stripes of query rows, and delta_i = dout_i . out_i of those rows for the dk/dv
/// kernel queued after it: dq_i = scale sum_j p_ij (dout_i . v_j - delta_i) k_j.
template <class T, int D>
__global__ void attention_mma_dq_kernel(const T* q, const T* k, const T* v, const T* dout, const T* out,
                                        const float* lse, float* delta, T* dq, Geometry g, int64_t row_blocks) {
  constexpr int W = Tiles<D>::kWarps, KT = Tiles<D>::kTile, R = W * kStripe, LD = D + kPad, PL = KT + kPad;
  constexpr Precision PI = InputPrecision<T>::value;
  __shared__ float qs[R][LD];
  __shared__ float gs[R][LD];
  __shared__ float ks[KT][LD];
  __shared__ float vs[KT][LD];
  __shared__ float ps[W][kStripe][PL];
  __shared__ float row_delta[R];
  __shared__ float row_lse[R];
  const int64_t b = blockIdx.x / row_blocks, i0 = (blockIdx.x % row_blocks) * R;
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int ek = round_up(g.E, mma::Policy<PI>::kK), evk = round_up(g.Ev, mma::Policy<PI>::kK);
  load_tile<T, D, LD>(qs, R, q, g.q, b, i0, g.L, g.E);
  load_tile<T, D, LD>(gs, R, dout, g.dout, b, i0, g.L, g.Ev);
  __syncthreads();   // gs is written
  for (int r = static_cast<int>(threadIdx.x); r < R; r += static_cast<int>(blockDim.x)) {
    const int64_t i = i0 + r;
    float dot = 0.0f;
    if (i < g.L) {
      const T* orow = out + g.out.at(b, i);
      for (int64_t d = 0; d < g.Ev; ++d) dot += gs[r][d] * static_cast<float>(orow[d]);
      delta[b * g.L + i] = dot;
    }
    row_delta[r] = dot;
    row_lse[r] = i < g.L ? lse[b * g.L + i] : 0.0f;
  }
  float acc[D / 8][4] = {};
  const float scale = static_cast<float>(g.scale);
  const int64_t s_end = g.causal ? (i0 + R < g.S ? i0 + R : g.S) : g.S;
  for (int64_t j0 = 0; j0 < s_end; j0 += KT) {
    __syncthreads();   // the previous tiles are consumed (the first time: row_delta, row_lse are set)
    load_tile<T, D, LD>(ks, KT, k, g.k, b, j0, g.S, g.E);
    load_tile<T, D, LD>(vs, KT, v, g.v, b, j0, g.S, g.Ev);
    __syncthreads();
    float s[KT / 8][4] = {}, dp[KT / 8][4] = {};
    mma::warp_gemm<PI, KT / 8>(s, &qs[warp * kStripe][0], LD, 1, &ks[0][0], 1, LD, ek);
    mma::warp_gemm<PI, KT / 8>(dp, &gs[warp * kStripe][0], LD, 1, &vs[0][0], 1, LD, evk);
#pragma unroll
    for (int n = 0; n < KT / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const mma::Pos at = mma::acc_pos(lane, e);
        const int r = warp * kStripe + at.row;
        const int64_t i = i0 + r, j = j0 + 8 * n + at.col;
        float ds = 0.0f;
        if (i < g.L && j < g.S) {
          const float p = prob(score<T, float>(g, s[n][e], b, i, j), row_lse[r]);
          ds = p * (dp[n][e] - row_delta[r]) * scale;   // d(q k^T)_ij
        }
        ps[warp][at.row][8 * n + at.col] = ds;
      }
    __syncwarp();   // the stripe's score gradients are staged
    mma::warp_gemm<PI, D / 8, true>(acc, &ps[warp][0][0], PL, 1, &ks[0][0], LD, 1, KT);
  }
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const mma::Pos at = mma::acc_pos(lane, e);
      const int64_t i = i0 + warp * kStripe + at.row, c = 8 * n + at.col;
      if (i < g.L && c < g.E) dq[(b * g.L + i) * g.E + c] = static_cast<T>(acc[n][e]);
    }
}

/// dk and dv of a block of stripes of key rows, walking tiles of queries: dv_j = sum_i p_ij dout_i,
/// dk_j = scale sum_i p_ij (dout_i . v_j - delta_i) q_i.
template <class T, int D>
__global__ void attention_mma_dkv_kernel(const T* q, const T* k, const T* v, const T* dout, const float* lse,
                                         const float* delta, T* dk, T* dv, Geometry g, int64_t row_blocks) {
  constexpr int W = Tiles<D>::kWarps, QT = Tiles<D>::kTile, R = W * kStripe, LD = D + kPad, PL = QT + kPad;
  constexpr Precision PI = InputPrecision<T>::value;
  __shared__ float ks[R][LD];
  __shared__ float vs[R][LD];
  __shared__ float qs[QT][LD];
  __shared__ float gs[QT][LD];
  __shared__ float ps[W][kStripe][PL];
  __shared__ float tile_lse[QT];
  __shared__ float tile_delta[QT];
  const int64_t b = blockIdx.x / row_blocks, j0 = (blockIdx.x % row_blocks) * R;
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int ek = round_up(g.E, mma::Policy<PI>::kK), evk = round_up(g.Ev, mma::Policy<PI>::kK);
  load_tile<T, D, LD>(ks, R, k, g.k, b, j0, g.S, g.E);
  load_tile<T, D, LD>(vs, R, v, g.v, b, j0, g.S, g.Ev);
  float dk_acc[D / 8][4] = {}, dv_acc[D / 8][4] = {};
  const float scale = static_cast<float>(g.scale);
  // with is_causal, queries before the block's first key attend none of its keys
  for (int64_t i0 = g.causal ? j0 : 0; i0 < g.L; i0 += QT) {
    __syncthreads();   // the previous tiles are consumed (the first time: ks, vs are written)
    load_tile<T, D, LD>(qs, QT, q, g.q, b, i0, g.L, g.E);
    load_tile<T, D, LD>(gs, QT, dout, g.dout, b, i0, g.L, g.Ev);
    for (int c = static_cast<int>(threadIdx.x); c < QT; c += static_cast<int>(blockDim.x)) {
      const int64_t i = i0 + c;
      tile_lse[c] = i < g.L ? lse[b * g.L + i] : 0.0f;
      tile_delta[c] = i < g.L ? delta[b * g.L + i] : 0.0f;
    }
    __syncthreads();
    float st[QT / 8][4] = {}, dpt[QT / 8][4] = {};   // (key, query): S^T = K Q^T, dP^T = V dO^T
    mma::warp_gemm<PI, QT / 8>(st, &ks[warp * kStripe][0], LD, 1, &qs[0][0], 1, LD, ek);
    mma::warp_gemm<PI, QT / 8>(dpt, &vs[warp * kStripe][0], LD, 1, &gs[0][0], 1, LD, evk);
#pragma unroll
    for (int n = 0; n < QT / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const mma::Pos at = mma::acc_pos(lane, e);
        const int c = 8 * n + at.col;
        const int64_t j = j0 + warp * kStripe + at.row, i = i0 + c;
        float p = 0.0f, ds = 0.0f;
        if (j < g.S && i < g.L) {
          p = prob(score<T, float>(g, st[n][e], b, i, j), tile_lse[c]);
          ds = p * (dpt[n][e] - tile_delta[c]) * scale;
        }
        ps[warp][at.row][c] = p;
        st[n][e] = ds;
      }
    __syncwarp();   // P^T staged
    mma::warp_gemm<PI, D / 8, true>(dv_acc, &ps[warp][0][0], PL, 1, &gs[0][0], LD, 1, QT);
    __syncwarp();   // every lane has read P^T
#pragma unroll
    for (int n = 0; n < QT / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const mma::Pos at = mma::acc_pos(lane, e);
        ps[warp][at.row][8 * n + at.col] = st[n][e];
      }
    __syncwarp();   // dS^T staged
    mma::warp_gemm<PI, D / 8, true>(dk_acc, &ps[warp][0][0], PL, 1, &qs[0][0], LD, 1, QT);
  }
#pragma unroll
  for (int n = 0; n < D / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const mma::Pos at = mma::acc_pos(lane, e);
      const int64_t j = j0 + warp * kStripe + at.row, c = 8 * n + at.col;
      if (j >= g.S) continue;
      if (c < g.E) dk[(b * g.S + j) * g.E + c] = static_cast<T>(dk_acc[n][e]);
      if (c < g.Ev) dv[(b * g.S + j) * g.Ev + c] = static_cast<T>(dv_acc[n][e]);
    }
}

/// Calls f(T{}, std::integral_constant<int, D>{}) for q's dtype (float32, float16, bfloat16) and the
/// kernels' padded head dim.
template <class F>
void dispatch_mma(DType dt, int64_t width, F&& f) {
  auto with_d = [&](auto t) {
    if (width <= 64) f(t, std::integral_constant<int, 64>{});
    else f(t, std::integral_constant<int, 128>{});
  };
  if (dt == kFloat32) with_d(float{});
  else if (dt == kFloat16) with_d(Half{});
  else if (dt == kBFloat16) with_d(BFloat16{});
  else throw Error(tg::detail::cat("scaled_dot_product_attention: no tensor-core kernels for ", dtype_name(dt)));
}

/// Whether the tensor-core kernels were compiled for an architecture with mma (Note [Attention providers]).
bool mma_compiled() {
  static const bool compiled = [] {
    cudaFuncAttributes attr{};
    if (cudaFuncGetAttributes(&attr, attention_mma_forward_kernel<float, 64>) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return attr.ptxVersion >= 80;
  }();
  return compiled;
}

/// The layout-conformance product of mma_layout_probe: see its contract in core/accelerator.h.
template <mma::Kind kind>
__global__ void mma_layout_probe_kernel(float* d_out) {
  const int lane = static_cast<int>(threadIdx.x);
  auto a_at = [](mma::Pos p) { return static_cast<float>((3 * p.row + p.col) % 7 - 3); };
  auto b_at = [](mma::Pos p) { return static_cast<float>((5 * p.row + 2 * p.col) % 5 - 2); };
  uint32_t a[4], b[2];
  if (kind == mma::Kind::Tf32) {
    for (int i = 0; i < 4; ++i) a[i] = mma::tf32_bits(a_at(mma::tf32_a_pos(lane, i)));
    for (int i = 0; i < 2; ++i) b[i] = mma::tf32_bits(b_at(mma::tf32_b_pos(lane, i)));
  } else {
    auto pack = [](float lo, float hi) { return kind == mma::Kind::F16 ? mma::pack_half2(lo, hi) : mma::pack_bf16x2(lo, hi); };
    for (int r = 0; r < 4; ++r) a[r] = pack(a_at(mma::h16_a_pos(lane, 2 * r)), a_at(mma::h16_a_pos(lane, 2 * r + 1)));
    for (int r = 0; r < 2; ++r) b[r] = pack(b_at(mma::h16_b_pos(lane, 2 * r)), b_at(mma::h16_b_pos(lane, 2 * r + 1)));
  }
  const float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  float d[4];
  mma::mma_sync<kind>(d, a, b, c);
  for (int i = 0; i < 4; ++i) {
    const mma::Pos p = mma::acc_pos(lane, i);
    d_out[p.row * 8 + p.col] = d[i];
  }
}

}  // namespace

std::vector<float> mma_layout_probe(int kind) {
  TG_CHECK(kind >= 0 && kind <= 2, Error, "mma_layout_probe: kind ", kind, " is not 0 (tf32), 1 (f16) or 2 (bf16)");
  Backend& be = backend(0);   // DeviceError when cuda:0 cannot be used
  DeviceContext& ctx = static_cast<CudaBackend&>(be).ctx();
  TG_CHECK(ctx.major >= 8, DeviceError, "mma_layout_probe: cuda:0 has compute capability ", ctx.major, ".", ctx.minor,
           "; mma.sync for TF32 and bfloat16 needs 8.0");
  TG_CHECK(mma_compiled(), DeviceError, "mma_layout_probe: the library was compiled for architectures (",
           TENSORGRAD_CUDA_ARCHS, ") without an sm_80 or newer target");
  DeviceGuard guard(ctx.device());
  const RawTensor d = RawTensor::empty({16, 8}, kFloat32, Device(DeviceType::CUDA, 0));
  if (kind == 0) TG_LAUNCH(1, 32, 0, ctx.stream(), mma_layout_probe_kernel<mma::Kind::Tf32>)(d.data<float>());
  else if (kind == 1) TG_LAUNCH(1, 32, 0, ctx.stream(), mma_layout_probe_kernel<mma::Kind::F16>)(d.data<float>());
  else TG_LAUNCH(1, 32, 0, ctx.stream(), mma_layout_probe_kernel<mma::Kind::Bf16>)(d.data<float>());
  TG_CUDA_CHECK(cudaGetLastError());
  const RawTensor host = d.to(Device(DeviceType::CPU));
  const float* p = host.data<float>();
  return std::vector<float>(p, p + 16 * 8);
}

AttentionChoice attention_kernels(int major, DType dt) {
  using tg::detail::cat;
  const char* env = std::getenv("TG_CUDA_ATTENTION");
  const std::string mode = env == nullptr ? "auto" : env;
  TG_CHECK(mode == "auto" || mode == "mma" || mode == "cuda-cores", Error, "TG_CUDA_ATTENTION=", mode,
           ": expected auto, mma or cuda-cores (Note [Attention providers])");
  if (mode == "cuda-cores") return {false, "CUDA cores (TG_CUDA_ATTENTION=cuda-cores)"};
  if (dt == kFloat64) return {false, "CUDA cores: float64 has no tensor-core kernels"};
  std::string why;
  if (major < 8) why = cat("compute capability ", major, ".x has no mma.sync for TF32 and bfloat16 (8.0 needed)");
  else if (!mma_compiled())
    why = cat("the library was compiled for architectures (", TENSORGRAD_CUDA_ARCHS, ") without an sm_80 or newer target");
  if (why.empty()) return {true, "tensor cores (mma.sync: 3xTF32 for float32, float16/bfloat16 with float32 accumulation)"};
  TG_CHECK(mode != "mma", Error, "scaled_dot_product_attention: TG_CUDA_ATTENTION=mma, but ", why);
  return {false, "CUDA cores: " + why};
}

void attention_mma(DeviceContext& ctx, const RawTensor& q, const RawTensor& k, const RawTensor& v, const AttentionArgs& a,
                   const RawTensor& out, const RawTensor& lse) {
  dispatch_mma(q.dtype(), std::max(a.E, a.Ev), [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value, R = Tiles<D>::kWarps * kStripe;
    const int64_t row_blocks = (a.L + R - 1) / R;
    TG_LAUNCH(static_cast<unsigned>(a.B * row_blocks), 32 * Tiles<D>::kWarps, 0, ctx.stream(),
              attention_mma_forward_kernel<T, D>)(q.data<T>(), k.data<T>(), v.data<T>(), out.data<T>(),
                                                  lse.data<float>(), geometry(a), row_blocks);
    TG_CUDA_CHECK(cudaGetLastError());
  });
}

void attention_mma_backward(DeviceContext& ctx, const RawTensor& q, const RawTensor& k, const RawTensor& v,
                            const RawTensor& out, const RawTensor& lse, const RawTensor& dout, const AttentionArgs& a,
                            const RawTensor& dq, const RawTensor& dk, const RawTensor& dv) {
  dispatch_mma(q.dtype(), std::max(a.E, a.Ev), [&](auto t, auto d) {
    using T = decltype(t);
    constexpr int D = decltype(d)::value, R = Tiles<D>::kWarps * kStripe;
    const Geometry g = geometry(a);
    const RawTensor delta = RawTensor::empty({a.B, a.L}, kFloat32, q.device());   // written by the dq kernel
    const int64_t q_blocks = (a.L + R - 1) / R, k_blocks = (a.S + R - 1) / R;
    if (a.B * q_blocks > 0) {
      TG_LAUNCH(static_cast<unsigned>(a.B * q_blocks), 32 * Tiles<D>::kWarps, 0, ctx.stream(),
                attention_mma_dq_kernel<T, D>)(q.data<T>(), k.data<T>(), v.data<T>(), dout.data<T>(), out.data<T>(),
                                               lse.data<float>(), delta.data<float>(), dq.data<T>(), g, q_blocks);
      TG_CUDA_CHECK(cudaGetLastError());
    }
    if (a.B * k_blocks > 0) {
      TG_LAUNCH(static_cast<unsigned>(a.B * k_blocks), 32 * Tiles<D>::kWarps, 0, ctx.stream(),
                attention_mma_dkv_kernel<T, D>)(q.data<T>(), k.data<T>(), v.data<T>(), dout.data<T>(),
                                                lse.data<float>(), delta.data<float>(), dk.data<T>(), dv.data<T>(), g,
                                                k_blocks);
      TG_CUDA_CHECK(cudaGetLastError());
    }
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
