// backend/cuda/elementwise.cu: the elementwise family of the CUDA Backend: copy (casts between every pair of
// dtypes), fill, binary with broadcasting through strides, where; unary is in backend/cuda/unary.cu. The
// per-element bodies are kernels/elementwise.h's; the CPU twin is backend/cpu/elementwise.cpp (Note [Kernel
// families] in backend/backend.h); tests/test_cuda.cpp compares the two.
//
// Every (dtype pair, functor) gets as few kernels as its fast path needs: a vectorized one for contiguous,
// 16-byte-aligned operands, the strided launcher's (backend/cuda/kernels.cuh) for the rest, which
// also takes unaligned contiguous views and broadcast scalars (a zero stride) at the same memory
// traffic. This file instantiates ~900 kernels (81 casts, ~100 binary (dtype, op) pairs), so each
// variant more is a visible share of the build (nvcc, the emulator, its sanitizer build).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "tensorgrad/backend/cuda/kernels.cuh"

namespace tg {
namespace cuda {
namespace detail {
namespace {

// ------------------------------------------------------------------------------------------------
// Kernel bodies. A *_vec_kernel takes contiguous, aligned operands; a *Strided body takes one
// element offset per operand (launch_strided).

/// dst = D(src), contiguous: V elements per load and store (V * sizeof of each type <= 16 bytes, both
/// pointers aligned to it), every load of a thread's vector before its store; scalar tail.
template <class D, class S, int V>
__global__ void cast_vec_kernel(D* dst, const S* src, int64_t n) {
  const int64_t nv = n / V;
  const auto* sv = reinterpret_cast<const Vec<S, V>*>(src);
  auto* dv = reinterpret_cast<Vec<D, V>*>(dst);
  for (int64_t i = global_thread(); i < nv; i += grid_stride()) {
    const Vec<S, V> a = sv[i];
    Vec<D, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = static_cast<D>(a.v[j]);
    dv[i] = r;
  }
  for (int64_t i = nv * V + global_thread(); i < n; i += grid_stride()) dst[i] = static_cast<D>(src[i]);
}
/// Elements per vector of a cast from S to D: 16 bytes of the wider type.
template <class D, class S>
constexpr int kCastWidth = 16 / (sizeof(D) > sizeof(S) ? sizeof(D) : sizeof(S));
inline bool aligned_to(const void* p, std::size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

template <class D, class S>
struct CastStrided {
  D* dst;
  const S* src;
  __device__ void operator()(const int64_t (&o)[2]) const { dst[o[0]] = static_cast<D>(src[o[1]]); }
};

/// dst = value, contiguous and 16-byte aligned: 16-byte stores, scalar tail.
template <class T, int V>
__global__ void fill_vec_kernel(T* dst, int64_t n, T value) {
  const int64_t nv = n / V;
  Vec<T, V> r;
#pragma unroll
  for (int j = 0; j < V; ++j) r.v[j] = value;
  auto* dv = reinterpret_cast<Vec<T, V>*>(dst);
  for (int64_t i = global_thread(); i < nv; i += grid_stride()) dv[i] = r;
  for (int64_t i = nv * V + global_thread(); i < n; i += grid_stride()) dst[i] = value;
}
template <class T>
struct FillStrided {
  T* dst;
  T value;
  __device__ void operator()(const int64_t (&o)[1]) const { dst[o[0]] = value; }
};

/// a op b for one element: computed in opmath_t<T>, stored as binary_out_t (bool for comparisons).
template <class F, class T>
__device__ __forceinline__ binary_out_t<F, T> apply_binary(T a, T b) {
  using M = opmath_t<T>;
  return binary_out_t<F, T>(F::apply(M(a), M(b)));
}

/// One operand of binary_vec_kernel, in 16-byte vectors: the whole of out's shape (kFull), one
/// element broadcast everywhere (kScalar: loaded once per thread), or a block of `row` vectors (its
/// trailing dims) repeated over out's leading dims (kRow: a bias or a row added to a matrix).
enum class VecMode : int { kFull, kScalar, kRow };
template <class T, int V>
struct VecOperand {
  const T* p;
  VecMode mode;
  int64_t row;   // vectors per row (kRow)
};

/// out = a op b, out contiguous and 16-byte aligned, of the operands' type (no comparison): vector
/// loads and stores, each operand read as its VecOperand says; scalar tail (kFull and kScalar only: a
/// kRow operand's rows are whole vectors, so out has no tail).
template <class T, class F, int V>
__global__ void binary_vec_kernel(VecOperand<T, V> a, VecOperand<T, V> b, T* out, int64_t n) {
  const int64_t nv = n / V, stride = grid_stride();
  const auto* av = reinterpret_cast<const Vec<T, V>*>(a.p);
  const auto* bv = reinterpret_cast<const Vec<T, V>*>(b.p);
  auto* ov = reinterpret_cast<Vec<T, V>*>(out);
  Vec<T, V> as, bs;   // the broadcast scalars, splatted once
#pragma unroll
  for (int j = 0; j < V; ++j) {
    as.v[j] = a.mode == VecMode::kScalar ? a.p[0] : T();
    bs.v[j] = b.mode == VecMode::kScalar ? b.p[0] : T();
  }
  // a kRow operand's vector index is i modulo its row, advanced by the grid stride without dividing
  const int64_t i0 = global_thread();
  int64_t ja = a.mode == VecMode::kRow ? i0 % a.row : 0, jb = b.mode == VecMode::kRow ? i0 % b.row : 0;
  const int64_t sa = a.mode == VecMode::kRow ? stride % a.row : 0, sb = b.mode == VecMode::kRow ? stride % b.row : 0;
  for (int64_t i = i0; i < nv; i += stride) {
    const Vec<T, V> x = a.mode == VecMode::kFull ? av[i] : a.mode == VecMode::kRow ? av[ja] : as;
    const Vec<T, V> y = b.mode == VecMode::kFull ? bv[i] : b.mode == VecMode::kRow ? bv[jb] : bs;
    Vec<T, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = apply_binary<F>(x.v[j], y.v[j]);
    ov[i] = r;
    if (a.mode == VecMode::kRow && (ja += sa) >= a.row) ja -= a.row;
    if (b.mode == VecMode::kRow && (jb += sb) >= b.row) jb -= b.row;
  }
  for (int64_t i = nv * V + i0; i < n; i += stride)
    out[i] = apply_binary<F>(a.mode == VecMode::kFull ? a.p[i] : as.v[0], b.mode == VecMode::kFull ? b.p[i] : bs.v[0]);
}

template <class T, class F>
struct BinaryStrided {
  binary_out_t<F, T>* out;
  const T *a, *b;
  __device__ void operator()(const int64_t (&o)[3]) const { out[o[0]] = apply_binary<F>(a[o[1]], b[o[2]]); }
};

template <class T>
struct WhereStrided {
  T* out;
  const bool* cond;
  const T *a, *b;
  __device__ void operator()(const int64_t (&o)[4]) const { out[o[0]] = cond[o[1]] ? a[o[2]] : b[o[3]]; }
};

/// How binary_vec_kernel can read operand t of a binary op whose contiguous, 16-byte aligned result
/// is `out` (t has out's shape, its broadcast dims stride 0): false when it cannot, and the strided
/// launcher takes it.
template <class T, int V>
bool vec_operand(const RawTensor& t, const RawTensor& out, VecOperand<T, V>& o) {
  const Shape& shape = t.shape();
  const Shape& strides = t.strides();
  if (shape != out.shape()) return false;
  // The trailing dims that are laid out contiguously (size-1 dims skipped) form a block of `block`
  // elements; the dims before them must all be broadcast, so t is that block repeated.
  int64_t block = 1;
  std::size_t d = shape.size();
  for (; d > 0; --d) {
    if (shape[d - 1] == 1) continue;
    if (strides[d - 1] != block) break;
    block *= shape[d - 1];
  }
  for (; d > 0; --d)
    if (shape[d - 1] != 1 && strides[d - 1] != 0) return false;
  if (block == 1) {   // one element everywhere
    o.mode = VecMode::kScalar;
    return true;
  }
  if (!aligned16(o.p)) return false;
  if (block == out.numel()) {
    o.mode = VecMode::kFull;
    return true;
  }
  if (block % V != 0) return false;
  o.mode = VecMode::kRow;
  o.row = block / V;
  return true;
}

template <class T>
constexpr bool kVectorizable = std::is_same<T, float>::value || std::is_same<T, double>::value ||
                               std::is_same<T, int64_t>::value;

// Note [Tiled transpose copy]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A copy whose destination runs along one dim and whose source runs along another (contiguous(t(x)),
// a permute that moves the innermost dim) cannot be coalesced on both sides by one thread per
// element: the strided kernel writes in order and reads with a stride, so each read fetches a
// 32-byte sector for one element. transpose_copy_kernel moves 32 x 32 tiles through shared memory:
// a warp reads 32 consecutive source elements of a tile's column, the block syncs, and a warp writes
// 32 consecutive destination elements of a row (the tile padded by one column so that the column
// read of shared memory does not hit one bank). The copy moves bits, so one kernel per element size
// serves every dtype; casts keep the strided kernel. Taken when the loop coalesces to (rows, cols)
// or (batch, rows, cols) with both sides at least kTransposeTile / 2.
constexpr int kTransposeTile = 32;

/// dst(b, r, c) = src(b, r, c) for a (batch, rows, cols) loop with dst at b * dbs + r * drs + c and
/// src at b * sbs + r + c * scs: Note [Tiled transpose copy]. E is an unsigned integer of the element's size.
template <class E>
__global__ void transpose_copy_kernel(E* dst, const E* src, int64_t batch, int64_t rows, int64_t cols, int64_t drs,
                                      int64_t scs, int64_t dbs, int64_t sbs) {
  __shared__ E tile[kTransposeTile][kTransposeTile + 1];   // [column in the tile][row in the tile]
  constexpr int kLanes = kTransposeTile, kSteps = kBlock / kTransposeTile;
  const int lane = static_cast<int>(threadIdx.x % kLanes), step = static_cast<int>(threadIdx.x / kLanes);
  const int64_t tiles_r = (rows + kTransposeTile - 1) / kTransposeTile;
  const int64_t tiles_c = (cols + kTransposeTile - 1) / kTransposeTile;
  const int64_t per_batch = tiles_r * tiles_c;
  for (int64_t t = blockIdx.x; t < batch * per_batch; t += gridDim.x) {   // the same t for the whole block
    const int64_t b = t / per_batch, in_batch = t % per_batch;
    const int64_t r0 = in_batch / tiles_c * kTransposeTile, c0 = in_batch % tiles_c * kTransposeTile;
    const E* s = src + b * sbs;
    E* d = dst + b * dbs;
    for (int k = step; k < kTransposeTile; k += kSteps) {   // lanes along the source's rows
      const int64_t r = r0 + lane, c = c0 + k;
      if (r < rows && c < cols) tile[k][lane] = s[r + c * scs];
    }
    __syncthreads();
    for (int k = step; k < kTransposeTile; k += kSteps) {   // lanes along the destination's columns
      const int64_t r = r0 + k, c = c0 + lane;
      if (r < rows && c < cols) d[r * drs + c] = tile[lane][k];
    }
    __syncthreads();   // the tile is read before the next one is written
  }
}

/// Runs transpose_copy_kernel for a same-dtype copy whose loop is a (batched) transpose; false (nothing
/// launched) for every other layout: Note [Tiled transpose copy].
bool transpose_copy(cudaStream_t stream, const RawTensor& src, const RawTensor& dst) {
  const Coalesced<2> c = coalesce<2>(dst.shape(), {&dst.strides(), &src.strides()});
  const std::size_t nd = c.sizes.size();
  if (nd != 2 && nd != 3) return false;
  const std::size_t ri = nd - 2, ci = nd - 1;   // ci: the destination's contiguous dim
  const int64_t rows = c.sizes[ri], cols = c.sizes[ci];
  if (c.strides[ci][0] != 1 || c.strides[ri][1] != 1 || c.strides[ci][1] <= 1) return false;
  if (rows < kTransposeTile / 2 || cols < kTransposeTile / 2) return false;
  const int64_t batch = nd == 3 ? c.sizes[0] : 1;
  const int64_t dbs = nd == 3 ? c.strides[0][0] : 0, sbs = nd == 3 ? c.strides[0][1] : 0;
  const int64_t tiles = batch * ((rows + kTransposeTile - 1) / kTransposeTile) *
                        ((cols + kTransposeTile - 1) / kTransposeTile);
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(tiles, kMaxGrid));
  auto launch = [&](auto bits) {
    using E = decltype(bits);
    TG_LAUNCH(grid, kBlock, 0, stream, transpose_copy_kernel<E>)(static_cast<E*>(dst.raw_data()),
                                                                 static_cast<const E*>(src.raw_data()), batch, rows,
                                                                 cols, c.strides[ri][0], c.strides[ci][1], dbs, sbs);
    TG_CUDA_CHECK(cudaGetLastError());
  };
  switch (dtype_size(dst.dtype())) {
    case 1: launch(uint8_t{}); break;
    case 2: launch(uint16_t{}); break;
    case 4: launch(uint32_t{}); break;
    case 8: launch(uint64_t{}); break;
    default: return false;
  }
  return true;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Backend methods. Validation happened in prim/.

void CudaBackend::copy(const RawTensor& src, const RawTensor& dst) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  const bool flat = src.is_contiguous() && dst.is_contiguous() && src.shape() == dst.shape();
  if (flat && src.dtype() == dst.dtype()) {   // a plain device-to-device copy at copy-engine speed
    count_launch();
    TG_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), static_cast<std::size_t>(n) * dtype_size(dst.dtype()),
                                  cudaMemcpyDeviceToDevice, stream));
    return;
  }
  if (src.dtype() == dst.dtype() && transpose_copy(stream, src, dst)) return;
  dispatch_dtype(src.dtype(), [&](auto s) {
    dispatch_dtype(dst.dtype(), [&](auto d) {
      using S = decltype(s);
      using D = decltype(d);
      constexpr int V = kCastWidth<D, S>;
      D* dp = dst.data<D>();
      const S* sp = src.data<S>();
      if (flat && aligned_to(dp, V * sizeof(D)) && aligned_to(sp, V * sizeof(S))) {
        TG_LAUNCH(grid_for(n, V), kBlock, 0, stream, cast_vec_kernel<D, S, V>)(dp, sp, n);
        TG_CUDA_CHECK(cudaGetLastError());
      } else {
        launch_strided<2>(stream, dst.shape(), {&dst.strides(), &src.strides()}, CastStrided<D, S>{dp, sp});
      }
    });
  });
}

void CudaBackend::fill(const RawTensor& dst, double value) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  if (dst.is_contiguous() && value == 0 && !std::signbit(value)) {   // +0 is all-zero bits in every dtype
    count_launch();
    TG_CUDA_CHECK(cudaMemsetAsync(dst.raw_data(), 0, static_cast<std::size_t>(n) * dtype_size(dst.dtype()), stream));
    return;
  }
  dispatch_dtype(dst.dtype(), [&](auto t) {
    using T = decltype(t);
    const T v = static_cast<T>(value);
    if (dst.is_contiguous() && aligned16(dst.data<T>())) {
      constexpr int V = VecWidth<T>::value;
      TG_LAUNCH(grid_for(n, V), kBlock, 0, stream, fill_vec_kernel<T, V>)(dst.data<T>(), n, v);
      TG_CUDA_CHECK(cudaGetLastError());
    } else {
      launch_strided<1>(stream, dst.shape(), {&dst.strides()}, FillStrided<T>{dst.data<T>(), v});
    }
  });
}

void CudaBackend::binary(BinaryOp op, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  dispatch_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    host_visit(op, [&](auto f) {
      using F = decltype(f);
      using O = binary_out_t<F, T>;   // bool for comparisons
      const T *ap = a.data<T>(), *bp = b.data<T>();
      O* op_ = out.data<O>();
      if constexpr (kVectorizable<T> && std::is_same<O, T>::value) {
        constexpr int V = VecWidth<T>::value;
        VecOperand<T, V> va{ap, VecMode::kFull, 0}, vb{bp, VecMode::kFull, 0};
        if (out.is_contiguous() && aligned16(op_) && vec_operand(a, out, va) && vec_operand(b, out, vb)) {
          TG_LAUNCH(grid_for(n, V), kBlock, 0, stream, binary_vec_kernel<T, F, V>)(va, vb, op_, n);
          TG_CUDA_CHECK(cudaGetLastError());
          return;
        }
      }
      // other broadcasts, views, unaligned rows, the 1-4 byte dtypes and comparisons
      launch_strided<3>(stream, out.shape(), {&out.strides(), &a.strides(), &b.strides()}, BinaryStrided<T, F>{op_, ap, bp});
    });
  });
}

void CudaBackend::where(const RawTensor& cond, const RawTensor& a, const RawTensor& b, const RawTensor& out) {
  if (out.numel() == 0) return;
  DeviceGuard guard(ctx_.device());
  cudaStream_t stream = ctx_.stream();
  dispatch_dtype(out.dtype(), [&](auto t) {
    using T = decltype(t);
    launch_strided<4>(stream, out.shape(), {&out.strides(), &cond.strides(), &a.strides(), &b.strides()},
                      WhereStrided<T>{out.data<T>(), cond.data<bool>(), a.data<T>(), b.data<T>()});
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
