// backend/cuda/norm.cu: the normalization family of the CUDA Backend: layer_norm's rows (group_norm's
// groups too, ops/norm.cpp) forward and backward, with the per-element rules of kernels/norm.h. One
// team per row (a warp for rows of up to kWarpRow elements, a block for longer ones) sums the row in
// double in a fixed tree, as the CPU sums it in double lanes (Note [Fused normalization rows] in
// backend/cpu/norm.cpp, the CPU twin). The weight and bias gradients are column sums over the rows,
// taken in two deterministic passes: partial sums over chunks of rows, then the chunks in order.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "tensorgrad/backend/cuda/kernels.cuh"
#include "tensorgrad/kernels/norm.h"

namespace tg {
namespace cuda {
namespace detail {
namespace {

/// Rows of at most this many elements go to one warp each; longer ones to a block each.
constexpr int64_t kWarpRow = 1024;

/// Calls launch(std::true_type) for rows of D elements that warps reduce, launch(std::false_type) for
/// rows that whole blocks reduce: the kernels' kWarp argument.
template <class Launch>
void by_team(int64_t D, const Launch& launch) {
  if (D <= kWarpRow)
    launch(std::true_type{});
  else
    launch(std::false_type{});
}

/// y = xhat w + b per row of x (M, D), with mean and rstd of each row (biased variance); w and b may
/// be null. The mean and the variance are two passes over the row, summed in double.
template <class T, bool kWarp>
__global__ void layer_norm_kernel(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t M, int64_t D,
                                  double eps) {
  __shared__ double scratch[32];
  const Team<kWarp> team;
  for (int64_t row = team.first; row < M; row += team.stride) {
    const T* xr = x + row * D;
    T* yr = y + row * D;
    double s = 0;
    for (int64_t d = team.lane; d < D; d += team.size) s += static_cast<double>(xr[d]);
    const double mu = team.allreduce(s, SumOp<double>(), scratch) / static_cast<double>(D);
    double v = 0;
    for (int64_t d = team.lane; d < D; d += team.size) {
      const double dd = static_cast<double>(xr[d]) - mu;
      v += dd * dd;
    }
    const double var = team.allreduce(v, SumOp<double>(), scratch) / static_cast<double>(D);
    const T m = static_cast<T>(mu), r = static_cast<T>(norm_math::rstd(var, eps));
    if (team.lane == 0) {
      mean[row] = m;
      rstd[row] = r;
    }
    for (int64_t d = team.lane; d < D; d += team.size) {
      T h = norm_math::xhat(xr[d], m, r);
      if (w != nullptr) h = h * w[d];
      if (b != nullptr) h = h + b[d];
      yr[d] = h;
    }
  }
}

/// dx = rstd (g - mean(g) - xhat mean(g xhat)) per row, g = dy w (dy when w is null): the rows of x
/// by teams of the blocks with blockIdx.y == 0 (Team: a grid-stride loop, so blocks past the rows'
/// need are idle).
template <class T, bool kWarp>
__device__ void layer_norm_dx_rows(const T* dy, const T* x, const T* mean, const T* rstd, const T* w, T* dx, int64_t M,
                                   int64_t D) {
  __shared__ double scratch[32];
  const Team<kWarp> team;
  for (int64_t row = team.first; row < M; row += team.stride) {
    const T *dr = dy + row * D, *xr = x + row * D;
    T* out = dx + row * D;
    const T m = mean[row], r = rstd[row];
    double s1 = 0, s2 = 0;
    for (int64_t d = team.lane; d < D; d += team.size) {
      const T g = w != nullptr ? dr[d] * w[d] : dr[d];
      s1 += static_cast<double>(g);
      s2 += static_cast<double>(g * norm_math::xhat(xr[d], m, r));
    }
    s1 = team.allreduce(s1, SumOp<double>(), scratch);
    s2 = team.allreduce(s2, SumOp<double>(), scratch);
    const T m1 = static_cast<T>(s1 / static_cast<double>(D)), m2 = static_cast<T>(s2 / static_cast<double>(D));
    for (int64_t d = team.lane; d < D; d += team.size) {
      const T g = w != nullptr ? dr[d] * w[d] : dr[d];
      out[d] = norm_math::dx(g, norm_math::xhat(xr[d], m, r), r, m1, m2);
    }
  }
}

/// The first pass of dw and db: block `part_block` = (column block cb, part p) sums dy xhat and dy
/// over rows [p rows_per_part, (p + 1) rows_per_part) for the 32 columns starting at 32 cb; its 256
/// threads are 32 columns by 8 row lanes, summed in lane order. Writes partial_w and partial_b
/// (parts, D).
template <class T>
__device__ void layer_norm_param_partials(const T* dy, const T* x, const T* mean, const T* rstd, int64_t M, int64_t D,
                                          int64_t rows_per_part, int64_t part_block, double* partial_w,
                                          double* partial_b) {
  __shared__ double sw[8][32], sb[8][32];
  const int64_t column_blocks = (D + 31) / 32;
  const int64_t cb = part_block % column_blocks, p = part_block / column_blocks;
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const int64_t c = cb * 32 + tx;
  const int64_t r0 = p * rows_per_part;
  const int64_t r1 = r0 + rows_per_part < M ? r0 + rows_per_part : M;
  double aw = 0, ab = 0;
  if (c < D)
    for (int64_t r = r0 + ty; r < r1; r += 8) {
      const T g = dy[r * D + c];
      aw += static_cast<double>(g * norm_math::xhat(x[r * D + c], mean[r], rstd[r]));
      ab += static_cast<double>(g);
    }
  sw[ty][tx] = aw;
  sb[ty][tx] = ab;
  __syncthreads();
  if (ty == 0 && c < D) {
    double a = 0, s = 0;
    for (int k = 0; k < 8; ++k) {
      a += sw[k][tx];
      s += sb[k][tx];
    }
    partial_w[p * D + c] = a;
    partial_b[p * D + c] = s;
  }
}

// Note [Launches of layer_norm's backward]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// dx (a team per row) and the first pass of dw and db (a block per 32 columns and chunk of rows) read
// the same inputs and nothing of each other, so they share one launch, the blocks split by
// blockIdx.y; the second pass, which needs every chunk's partial sums, is the only other launch. A
// transformer block has two layer_norms, so this is two of the launches a block's backward queues
// (tests/test_cuda.cpp counts them). The results are those of two separate kernels, bit for bit.

/// layer_norm's backward but the final column sums, in one launch: the blocks of row y == 0 compute
/// dx (when dx is not null), those of the next row the partial sums of dw and db (when partial_w is
/// not null), part_blocks of them; a block's role is uniform, so its barriers are too.
template <class T, bool kWarp>
__global__ void layer_norm_backward_kernel(const T* dy, const T* x, const T* mean, const T* rstd, const T* w, T* dx,
                                           int64_t M, int64_t D, int64_t rows_per_part, int64_t part_blocks,
                                           double* partial_w, double* partial_b) {
  const bool dx_role = dx != nullptr && blockIdx.y == 0;
  if (dx_role) {
    layer_norm_dx_rows<T, kWarp>(dy, x, mean, rstd, w, dx, M, D);
  } else if (blockIdx.x < part_blocks) {
    layer_norm_param_partials<T>(dy, x, mean, rstd, M, D, rows_per_part, int64_t(blockIdx.x), partial_w, partial_b);
  }
}

/// The second pass: dw[c] and db[c] (either may be null) = the parts' sums in part order.
template <class T>
__global__ void layer_norm_param_sums_kernel(const double* partial_w, const double* partial_b, int64_t parts,
                                             int64_t D, T* dw, T* db) {
  for (int64_t c = global_thread(); c < D; c += grid_stride()) {
    double a = 0, s = 0;
    for (int64_t p = 0; p < parts; ++p) {
      a += partial_w[p * D + c];
      s += partial_b[p * D + c];
    }
    if (dw != nullptr) dw[c] = static_cast<T>(a);
    if (db != nullptr) db[c] = static_cast<T>(s);
  }
}

template <class T>
const T* data_or_null(const RawTensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}
template <class T>
T* mutable_or_null(const RawTensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Backend methods. Validation happened in prim/norm.cpp.

void CudaBackend::layer_norm(const RawTensor& x, const RawTensor& w, const RawTensor& b, double eps, const RawTensor& y,
                             const RawTensor& mean, const RawTensor& rstd) {
  const int64_t M = x.shape()[0], D = x.shape()[1];
  if (M == 0 || D == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  dispatch_only<kFloat32, kFloat64>(x.dtype(), "layer_norm", [&](auto t) {
    using T = decltype(t);
    const T *xp = x.data<T>(), *wp = data_or_null<T>(w), *bp = data_or_null<T>(b);
    T *yp = y.data<T>(), *mp = mean.data<T>(), *rp = rstd.data<T>();
    by_team(D, [&](auto warp) {
      constexpr bool kWarp = decltype(warp)::value;
      TG_LAUNCH(team_grid(M, kWarp), kBlock, 0, stream, layer_norm_kernel<T, kWarp>)(xp, wp, bp, yp, mp, rp, M, D, eps);
      TG_CUDA_CHECK(cudaGetLastError());
    });
  });
}

void CudaBackend::layer_norm_backward(const RawTensor& dy, const RawTensor& x, const RawTensor& mean, const RawTensor& rstd,
                                      const RawTensor& w, const RawTensor& dx, const RawTensor& dw, const RawTensor& db) {
  const int64_t M = x.shape()[0], D = x.shape()[1];
  if (M == 0 || D == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  dispatch_only<kFloat32, kFloat64>(x.dtype(), "layer_norm", [&](auto t) {
    using T = decltype(t);
    const T *dyp = dy.data<T>(), *xp = x.data<T>(), *mp = mean.data<T>(), *rp = rstd.data<T>();
    const bool params = dw.defined() || db.defined();
    if (!dx.defined() && !params) return;
    // Chunks of at least 32 rows, at most 128 of them: the partial sums stay small and their order
    // depends only on M.
    const int64_t rows_per_part = std::max<int64_t>(32, (M + 127) / 128);
    const int64_t parts = (M + rows_per_part - 1) / rows_per_part;
    const int64_t part_blocks = params ? (D + 31) / 32 * parts : 0;
    // The partial sums live until this function returns; the kernels that read them are queued on
    // the same stream first, so the caching allocator hands the block out again only after them.
    const RawTensor partial = params ? RawTensor::empty({2 * parts * D}, kFloat64, x.device()) : RawTensor();
    double* pw = params ? partial.data<double>() : nullptr;
    double* pb = params ? pw + parts * D : nullptr;
    // dx and the partial sums in one launch (Note [Launches of layer_norm's backward]), then the sums.
    by_team(D, [&](auto warp) {
      constexpr bool kWarp = decltype(warp)::value;
      const unsigned dx_blocks = dx.defined() ? team_grid(M, kWarp) : 0u;
      const dim3 grid(std::max<unsigned>({dx_blocks, static_cast<unsigned>(part_blocks), 1u}),
                      (dx.defined() ? 1u : 0u) + (params ? 1u : 0u));
      TG_LAUNCH(grid, kBlock, 0, stream, layer_norm_backward_kernel<T, kWarp>)(
          dyp, xp, mp, rp, data_or_null<T>(w), mutable_or_null<T>(dx), M, D, rows_per_part, part_blocks, pw, pb);
      TG_CUDA_CHECK(cudaGetLastError());
    });
    if (!params) return;
    TG_LAUNCH(grid_for(D), kBlock, 0, stream, layer_norm_param_sums_kernel<T>)(pw, pb, parts, D, mutable_or_null<T>(dw),
                                                                               mutable_or_null<T>(db));
    TG_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
