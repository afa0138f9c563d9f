// backend/cuda/kernels.cuh: building blocks shared by the kernels of backend/cuda/*.cu: launch geometry,
// strided offset calculators (the GPU twin of Note [Strided loops] in backend/cpu/cpu_backend.h),
// aligned vector types, and deterministic warp/block reductions. Device code (nvcc, or the host
// compiler against the CUDA emulator's stand-in headers); internal to backend/cuda/.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "tensorgrad/backend/cuda/context.cuh"
#include "tensorgrad/backend/cuda/launch.cuh"
#include "tensorgrad/core/shape.h"

namespace tg {
namespace cuda {
namespace detail {

constexpr int kBlock = 256;        // threads per block of the elementwise kernels
constexpr int kMaxGrid = 8192;     // grid-stride loops cover the rest (independent of the device)
constexpr int kMaxDims = 8;        // dims an OffsetCalc carries after coalescing

/// Host-side twins of visit() in kernels/elementwise.h (which is __host__ __device__ and so may not call the
/// host lambdas that launch kernels): visitor(fn::Relu{}), ... from the same X-macro lists.
template <class Visitor>
void host_visit(UnaryOp op, Visitor&& visitor) {
  switch (op) {
#define TG_CUDA_CASE(Name) \
  case UnaryOp::Name: visitor(fn::Name{}); return;
    TG_UNARY_OPS(TG_CUDA_CASE)
#undef TG_CUDA_CASE
  }
  throw Error("host_visit: unknown UnaryOp");
}
template <class Visitor>
void host_visit(BinaryOp op, Visitor&& visitor) {
  switch (op) {
#define TG_CUDA_CASE(Name) \
  case BinaryOp::Name: visitor(fn::Name{}); return;
    TG_BINARY_OPS(TG_CUDA_CASE)
#undef TG_CUDA_CASE
  }
  throw Error("host_visit: unknown BinaryOp");
}

/// Blocks for n work items, `per_thread` items per thread, capped at kMaxGrid.
inline unsigned grid_for(int64_t n, int64_t per_thread = 1) {
  const int64_t threads = (n + per_thread - 1) / per_thread;
  const int64_t blocks = (threads + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxGrid ? kMaxGrid : blocks));
}

__device__ __forceinline__ int64_t global_thread() { return blockIdx.x * int64_t(blockDim.x) + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return int64_t(blockDim.x) * gridDim.x; }

template <class T>
__host__ __device__ __forceinline__ bool is_nan(T v) {
  return v != v;   // false for integers
}
template <class T>
__host__ __device__ __forceinline__ bool is_inf(T v) {
  return v == T(INFINITY) || v == -T(INFINITY);
}
// Math in the operand's precision, named explicitly (no overload surprises between float and double).
__device__ __forceinline__ float texp(float x) { return expf(x); }
__device__ __forceinline__ double texp(double x) { return exp(x); }
__device__ __forceinline__ float tlog(float x) { return logf(x); }
__device__ __forceinline__ double tlog(double x) { return log(x); }
__device__ __forceinline__ float tsqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double tsqrt(double x) { return sqrt(x); }

/// Records the first bad input a kernel meets; see Note [Device error flag] in backend/cuda/softmax_loss.cu.
__device__ __forceinline__ void record_error(DeviceErrorFlag* flag, int code, int op, int dim, long long value,
                                             long long bound) {
  if (atomicCAS(&flag->code, 0, code) == 0) {
    flag->op = op;
    flag->dim = dim;
    flag->value = value;
    flag->bound = bound;
  }
}

// ------------------------------------------------------------------------------------------------
// Strided offsets. The host coalesces dims (size-1 dims dropped, dims contiguous in every operand
// merged), keeps at most kMaxDims inner dims in the calculator, and loops over the rest itself
// (launch_strided below). A linear index becomes one element offset per operand.

template <int N>
struct OffsetCalc {
  int ndim = 0;
  bool narrow = false;   // every index fits 32 bits: cheaper divisions
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxDims][N] = {};
  int64_t base[N] = {};
  __device__ __forceinline__ void get(int64_t linear, int64_t (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = base[k];
    if (narrow) {
      uint32_t lin = static_cast<uint32_t>(linear);
      for (int d = ndim - 1; d >= 0; --d) {
        const uint32_t size = static_cast<uint32_t>(sizes[d]);
        const uint32_t q = lin / size, idx = lin - q * size;
        lin = q;
#pragma unroll
        for (int k = 0; k < N; ++k) off[k] += int64_t(idx) * strides[d][k];
      }
      return;
    }
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t size = sizes[d];
      const int64_t q = linear / size, idx = linear - q * size;
      linear = q;
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += idx * strides[d][k];
    }
  }
};

/// Offsets of a loop with at most two (coalesced) dims: no division at all.
template <int N>
struct Strides2 {
  int64_t base[N], row[N], col[N];
};

template <int N>
struct Coalesced {
  std::vector<int64_t> sizes;                   // outer .. inner
  std::vector<std::array<int64_t, N>> strides;  // per dim, per operand (elements)
};

template <int N>
Coalesced<N> coalesce(const Shape& shape, const std::array<const Shape*, N>& strides) {
  Coalesced<N> c;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    std::array<int64_t, N> st;
    for (int k = 0; k < N; ++k) st[k] = (*strides[k])[d];
    if (!c.sizes.empty()) {
      bool merge = true;
      for (int k = 0; k < N; ++k)
        if (c.strides.back()[k] != st[k] * shape[d]) merge = false;
      if (merge) {
        c.sizes.back() *= shape[d];
        c.strides.back() = st;
        continue;
      }
    }
    c.sizes.push_back(shape[d]);
    c.strides.push_back(st);
  }
  return c;
}

/// Calls launch(calc, n) once per slice: calc covers the (at most kMaxDims) inner dims of the
/// coalesced loop with n elements; dims beyond kMaxDims are walked here on the host (rare: only
/// tensors of rank > 8 that do not coalesce).
template <int N, class Launch>
void for_each_slice(const Shape& shape, const std::array<const Shape*, N>& strides, Launch launch) {
  for (int64_t s : shape)
    if (s == 0) return;
  const Coalesced<N> c = coalesce<N>(shape, strides);
  const int nd = static_cast<int>(c.sizes.size());
  const int inner = nd < kMaxDims ? nd : kMaxDims;
  const int outer = nd - inner;
  OffsetCalc<N> calc;
  calc.ndim = inner;
  int64_t n = 1;
  for (int d = 0; d < inner; ++d) {
    calc.sizes[d] = c.sizes[outer + d];
    for (int k = 0; k < N; ++k) calc.strides[d][k] = c.strides[outer + d][k];
    n *= calc.sizes[d];
  }
  if (n == 0) return;
  calc.narrow = n <= int64_t(UINT32_MAX);
  std::vector<int64_t> idx(static_cast<std::size_t>(outer), 0);
  for (;;) {
    for (int k = 0; k < N; ++k) {
      calc.base[k] = 0;
      for (int d = 0; d < outer; ++d) calc.base[k] += idx[d] * c.strides[d][k];
    }
    launch(calc, n);
    int d = outer - 1;
    for (; d >= 0; --d) {   // odometer over the outer dims
      if (++idx[d] < c.sizes[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

/// body(off) for every element of a strided loop; off[k] is operand k's element offset.
template <int N, class Body>
__global__ void strided_kernel(int64_t n, OffsetCalc<N> calc, Body body) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) {
    int64_t off[N];
    calc.get(i, off);
    body(off);
  }
}

/// body(off) over a (rows, cols) loop: blocks along x walk a row (coalesced when the inner strides
/// are 1), blocks along y walk rows.
template <int N, class Body>
__global__ void strided2d_kernel(int64_t rows, int64_t cols, Strides2<N> st, Body body) {
  for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
    for (int64_t c = global_thread(); c < cols; c += grid_stride()) {
      int64_t off[N];
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] = st.base[k] + r * st.row[k] + c * st.col[k];
      body(off);
    }
  }
}

/// Runs body over every element of `shape`, operand k at strides[k] (broadcast operands have stride
/// 0). Loops of one or two coalesced dims with long rows (transposes, row and column broadcasts) use
/// the division-free 2-D kernel; the rest compute offsets with OffsetCalc.
template <int N, class Body>
void launch_strided(cudaStream_t stream, const Shape& shape, const std::array<const Shape*, N>& strides,
                    const Body& body) {
  for (int64_t s : shape)
    if (s == 0) return;
  const Coalesced<N> c = coalesce<N>(shape, strides);
  const std::size_t nd = c.sizes.size();
  if (nd <= 1 || (nd == 2 && c.sizes[1] >= 128)) {
    Strides2<N> st;
    const int64_t rows = nd == 2 ? c.sizes[0] : 1, cols = nd >= 1 ? c.sizes[nd - 1] : 1;
    for (int k = 0; k < N; ++k) {
      st.base[k] = 0;
      st.row[k] = nd == 2 ? c.strides[0][k] : 0;
      st.col[k] = nd >= 1 ? c.strides[nd - 1][k] : 0;
    }
    const int64_t bx = std::min<int64_t>((cols + kBlock - 1) / kBlock, kMaxGrid);
    const int64_t by = std::min<int64_t>({rows, 65535, std::max<int64_t>(1, 65536 / bx)});
    TG_LAUNCH(dim3(unsigned(bx), unsigned(by)), kBlock, 0, stream, strided2d_kernel<N, Body>)(rows, cols, st, body);
    TG_CUDA_CHECK(cudaGetLastError());
    return;
  }
  for_each_slice<N>(shape, strides, [&](const OffsetCalc<N>& calc, int64_t n) {
    TG_LAUNCH(grid_for(n), kBlock, 0, stream, strided_kernel<N, Body>)(n, calc, body);
    TG_CUDA_CHECK(cudaGetLastError());
  });
}

/// body(i) for i in [0, n): contiguous operands.
template <class Body>
__global__ void flat_kernel(int64_t n, Body body) {
  for (int64_t i = global_thread(); i < n; i += grid_stride()) body(i);
}

template <class Body>
void launch_flat(cudaStream_t stream, int64_t n, const Body& body) {
  if (n == 0) return;
  TG_LAUNCH(grid_for(n), kBlock, 0, stream, flat_kernel<Body>)(n, body);
  TG_CUDA_CHECK(cudaGetLastError());
}

/// A flat body split in two: load(i) returns every value element i reads, store(i, loaded) computes
/// and writes it. Each thread loads kIlp elements (a grid stride apart, so a warp's loads stay
/// coalesced) before it stores any: kIlp loads per operand in flight instead of one behind each
/// store (the compiler may not move a load above a store that could alias it).
constexpr int kIlp = 4;
template <class Body>
__global__ void flat_ilp_kernel(int64_t n, Body body) {
  using Loaded = decltype(body.load(int64_t(0)));
  const int64_t stride = grid_stride();
  for (int64_t first = global_thread(); first < n; first += stride * kIlp) {
    Loaded v[kIlp];
#pragma unroll
    for (int u = 0; u < kIlp; ++u) {
      const int64_t i = first + u * stride;
      if (i < n) v[u] = body.load(i);
    }
#pragma unroll
    for (int u = 0; u < kIlp; ++u) {
      const int64_t i = first + u * stride;
      if (i < n) body.store(i, v[u]);
    }
  }
}

template <class Body>
void launch_flat_ilp(cudaStream_t stream, int64_t n, const Body& body) {
  if (n == 0) return;
  TG_LAUNCH(grid_for(n, kIlp), kBlock, 0, stream, flat_ilp_kernel<Body>)(n, body);
  TG_CUDA_CHECK(cudaGetLastError());
}

// ------------------------------------------------------------------------------------------------
// 16-byte vectors: float4 / double2 loads and stores where every pointer is 16-byte aligned.

template <class T>
struct VecWidth {
  static constexpr int value = 16 / sizeof(T);
};
template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }
/// Whether a and b sit at the same offset from a 16-byte boundary (so the same element indices of
/// both are vector-aligned).
__host__ __device__ __forceinline__ bool same_alignment16(const void* a, const void* b) {
  return ((reinterpret_cast<uintptr_t>(a) ^ reinterpret_cast<uintptr_t>(b)) & 15) == 0;
}

/// A contiguous row of n elements at p, split for 16-byte loads: [0, head) and [head + nvec * V, n)
/// one element at a time, the nvec vectors between them as aligned Vec<T, V>. The split depends
/// only on n and p's offset from a 16-byte boundary.
template <class T>
struct VecRow {
  static constexpr int V = VecWidth<T>::value;
  int64_t head, nvec;
  __device__ __forceinline__ VecRow(const T* p, int64_t n) {
    const int64_t bytes = static_cast<int64_t>((16 - (reinterpret_cast<uintptr_t>(p) & 15)) & 15);
    head = bytes % static_cast<int64_t>(sizeof(T)) != 0 ? n : bytes / static_cast<int64_t>(sizeof(T));
    if (head > n) head = n;
    nvec = (n - head) / V;
  }
  __device__ __forceinline__ int64_t tail() const { return head + nvec * V; }
};

/// Runs a team over a contiguous row of n elements at p: scalar(d) for each element of the head and
/// tail, vector(d) for each aligned V-element vector starting at element d. Lane `lane` of `size`
/// takes every size-th piece, so adjacent lanes read adjacent 16-byte vectors (coalesced).
/// kUnroll > 1 unrolls the vector loop that many times (the order of the calls is unchanged), so that
/// a reduction's loads, which do not depend on its accumulators, are in flight together. On the H200
/// 4 made the row sums 6-12% faster (sum over everything 0.105 -> 0.092 ms, by row 0.096 -> 0.090 ms),
/// left max/argmax as they were, and made softmax and cross-entropy 6-10% slower, so only
/// reduce_rows_kernel asks for it; the default leaves unrolling to the compiler.
template <int kUnroll = 1, class T, class Scalar, class Vector>
__device__ __forceinline__ void row_for_each(const T* p, int64_t n, int lane, int size, Scalar&& scalar,
                                             Vector&& vector) {
  const VecRow<T> r(p, n);
  for (int64_t d = lane; d < r.head; d += size) scalar(d);
  if constexpr (kUnroll > 1) {
#pragma unroll kUnroll
    for (int64_t i = lane; i < r.nvec; i += size) vector(r.head + i * VecRow<T>::V);
  } else {
    for (int64_t i = lane; i < r.nvec; i += size) vector(r.head + i * VecRow<T>::V);
  }
  for (int64_t d = r.tail() + lane; d < n; d += size) scalar(d);
}
template <class T, int V>
__device__ __forceinline__ Vec<T, V> load_vec(const T* p) {
  return *reinterpret_cast<const Vec<T, V>*>(p);
}
template <class T, int V>
__device__ __forceinline__ void store_vec(T* p, const Vec<T, V>& v) {
  *reinterpret_cast<Vec<T, V>*>(p) = v;
}
/// Combines the K accumulators of one thread in a fixed order (a pairwise tree).
template <int K, class A, class Combine>
__device__ __forceinline__ A combine_slots(A (&acc)[K], const Combine& combine) {
#pragma unroll
  for (int w = 1; w < K; w *= 2) {
#pragma unroll
    for (int j = 0; j + w < K; j += 2 * w) acc[j] = combine(acc[j], acc[j + w]);
  }
  return acc[0];
}

// Note [Hand-written reductions, not CUB]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The warp and block trees below are our own rather than cub::WarpReduce / cub::BlockReduce /
// cub::BlockLoad, because CUB cannot run on the CUDA emulator, which is where these kernels are
// tested (no GPU in CI). CUB's headers (CUDA 13's cccl) include the toolkit's cuda_fp16.h,
// vector_types.h, driver_types.h and cuda_runtime_api.h themselves, which redefine the emulator's
// stand-in dim3, cudaError and runtime functions (g++ stops at 68 errors on a kernel that only uses
// BlockReduce), and its warp primitives are inline PTX selected by NV_IF_TARGET, which a host compiler
// cannot execute. A stand-in CUB in the emulator would test the stand-in, not CUB, and the emulator's
// planted-missing-barrier canary (tools/cuda_emulator_check.sh) needs a barrier in our code to
// remove. Our trees are also fixed given the shape (same bits every run), which CUB documents only
// for some algorithms. backend/cuda/sort.cu does use CUB (its segmented radix sort) through a stand-in, as
// nothing of ours replaces it.

// ------------------------------------------------------------------------------------------------
// Deterministic reductions: a fixed tree given the team size, so equal inputs give equal bits.
// Accumulator types provide shfl_down / shfl_idx overloads (structs in their own .cu file); a
// Combine provides operator()(a, b) and a static identity().

__device__ __forceinline__ float shfl_down(float v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ double shfl_down(double v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ long long shfl_down(long long v, int o) { return __shfl_down_sync(0xffffffffu, v, o); }
__device__ __forceinline__ float shfl_idx(float v, int src) { return __shfl_sync(0xffffffffu, v, src); }
__device__ __forceinline__ double shfl_idx(double v, int src) { return __shfl_sync(0xffffffffu, v, src); }
__device__ __forceinline__ long long shfl_idx(long long v, int src) { return __shfl_sync(0xffffffffu, v, src); }

/// Reduces v over the 32 lanes of a warp; lane 0 holds the result.
template <class A, class Combine>
__device__ __forceinline__ A warp_reduce(A v, const Combine& combine) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = combine(v, shfl_down(v, o));
  return v;
}
/// Same, with the result returned to every lane.
template <class A, class Combine>
__device__ __forceinline__ A warp_allreduce(A v, const Combine& combine) {
  return shfl_idx(warp_reduce(v, combine), 0);
}

/// Reduces v over the whole block (blockDim.x a multiple of 32, at most 1024) and returns the result
/// to every thread. `scratch` is shared memory for 32 values. Must be reached by every thread of the
/// block; ends with a barrier, so the scratch can be reused at once.
template <class A, class Combine>
__device__ A block_allreduce(A v, const Combine& combine, A* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  v = warp_reduce(v, combine);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < nwarps ? scratch[lane] : Combine::identity();
    v = warp_reduce(v, combine);
    if (lane == 0) scratch[0] = v;
  }
  __syncthreads();
  v = scratch[0];
  __syncthreads();
  return v;
}

/// A team reduces one row: a warp (kWarp, several rows per block) or the whole block.
template <bool kWarp>
struct Team {
  int lane, size;
  int64_t first, stride;   // rows: first, first + stride, ...
  __device__ Team() {
    if (kWarp) {
      const int per_block = blockDim.x >> 5;
      lane = threadIdx.x & 31;
      size = 32;
      first = int64_t(blockIdx.x) * per_block + (threadIdx.x >> 5);
      stride = int64_t(gridDim.x) * per_block;
    } else {
      lane = threadIdx.x;
      size = blockDim.x;
      first = blockIdx.x;
      stride = gridDim.x;
    }
  }
  template <class A, class Combine>
  __device__ A allreduce(A v, const Combine& combine, A* scratch) const {
    if (kWarp) return warp_allreduce(v, combine);
    return block_allreduce(v, combine, scratch);
  }
};

/// Blocks for `rows` rows handled by warps (8 per block) or by whole blocks.
inline unsigned team_grid(int64_t rows, bool warp) {
  const int64_t blocks = warp ? (rows + kBlock / 32 - 1) / (kBlock / 32) : rows;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxGrid ? kMaxGrid : blocks));
}

template <class A>
struct SumOp {
  __device__ __forceinline__ A operator()(A a, A b) const { return a + b; }
  __device__ __forceinline__ static A identity() { return A(0); }
};

}  // namespace detail
}  // namespace cuda
}  // namespace tg
