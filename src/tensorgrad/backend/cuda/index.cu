// backend/cuda/index.cu: the indexing part of the CUDA Backend: index_select / index_add along a dim and
// gather / scatter_add through an index tensor. Index ranges are checked here, not on the host (that
// would synchronize): an out-of-range index is skipped (0 is read) and recorded in the device error
// flag, raised as the CPU's IndexError at the next sync (Note [Device error flag] in backend/cuda/softmax_loss.cu).
// The range rule is kernels/index.h's; the CPU twin is backend/cpu/index.cpp (Note [Kernel families]
// in backend/backend.h).
//
// Determinism: index_add and scatter_add accumulate with atomicAdd, so when an index repeats, the
// order of the floating-point additions (and so the last bits of the result) may differ from run to
// run; the CPU backend adds in index order. int64 accumulation is exact either way.
#include <cstdint>
#include <cstring>

#include "tensorgrad/backend/cuda/kernels.cuh"
#include "tensorgrad/kernels/index.h"

namespace tg {
namespace cuda {
namespace detail {
namespace {

__device__ __forceinline__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(int64_t* p, int64_t v) {   // two's complement: unsigned add is exact
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ void atomic_add(int32_t* p, int32_t v) { atomicAdd(reinterpret_cast<int*>(p), int(v)); }
/// The 1- and 2-byte types (float16, bfloat16, int8, uint8, bool): a compare-and-swap loop on the
/// aligned 32-bit word that holds the element, the sum computed in opmath_t and rounded once.
template <class T>
__device__ __forceinline__ void atomic_add(T* p, T v) {
  static_assert(sizeof(T) < 4, "wider types have their own atomic_add");
  const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
  int* word = reinterpret_cast<int*>(addr & ~uintptr_t(3));
  const unsigned shift = static_cast<unsigned>(addr & 3) * 8;
  const unsigned mask = ((1u << (8 * sizeof(T))) - 1u) << shift;
  int old = *word, assumed;
  do {
    assumed = old;
    const unsigned bits = (static_cast<unsigned>(assumed) & mask) >> shift;
    T cur;
    memcpy(&cur, &bits, sizeof(T));   // little-endian: the low bytes of bits
    const T sum = T(opmath_t<T>(cur) + opmath_t<T>(v));
    unsigned sum_bits = 0;
    memcpy(&sum_bits, &sum, sizeof(T));
    const unsigned next = (static_cast<unsigned>(assumed) & ~mask) | (sum_bits << shift);
    old = atomicCAS(word, assumed, static_cast<int>(next));
  } while (old != assumed);
}

/// out (outer, K, inner) = x (outer, D, inner) at index (K) along the middle dim. One thread per output
/// element; consecutive threads walk `inner`, so rows of inner elements are copied coalesced.
template <class T>
struct IndexSelectFlat {
  const T* x;
  const int64_t* index;
  T* out;
  int64_t D, K, inner;
  DeviceErrorFlag* flag;
  int dim;
  __device__ void operator()(int64_t e) const {
    const int64_t rest = e / inner, i = e - rest * inner;
    const int64_t o = rest / K, j = rest - o * K;
    const int64_t id = index[j];
    if (index_math::in_range(id, D)) {
      out[e] = x[(o * D + id) * inner + i];
    } else {
      out[e] = T(0);
      record_error(flag, kErrIndex, kOpIndexSelect, dim, id, D);
    }
  }
};

/// dst (outer, D, inner) at index (K) += src (outer, K, inner); repeated indices accumulate.
template <class T>
struct IndexAddFlat {
  T* dst;
  const int64_t* index;
  const T* src;
  int64_t D, K, inner;
  DeviceErrorFlag* flag;
  int dim;
  __device__ void operator()(int64_t e) const {
    const int64_t rest = e / inner, i = e - rest * inner;
    const int64_t o = rest / K, j = rest - o * K;
    const int64_t id = index[j];
    if (index_math::in_range(id, D)) atomic_add(dst + (o * D + id) * inner + i, src[e]);
    else record_error(flag, kErrIndex, kOpIndexAdd, dim, id, D);
  }
};

/// Walks index's shape: operand 0 is out (gather) or src (scatter), 1 the index, 2 x/dst with its
/// stride along dim zeroed; the index picks the position along dim.
template <class T>
struct GatherStrided {
  const T* x;
  const int64_t* index;
  T* out;
  int64_t dim_stride = 0, dim_size = 0;
  DeviceErrorFlag* flag = nullptr;
  int dim = 0;
  __device__ void operator()(const int64_t (&o)[3]) const {
    const int64_t id = index[o[1]];
    if (index_math::in_range(id, dim_size)) {
      out[o[0]] = x[o[2] + id * dim_stride];
    } else {
      out[o[0]] = T(0);
      record_error(flag, kErrIndex, kOpGather, dim, id, dim_size);
    }
  }
};
template <class T>
struct ScatterAddStrided {
  T* dst;
  const int64_t* index;
  const T* src;
  int64_t dim_stride = 0, dim_size = 0;
  DeviceErrorFlag* flag = nullptr;
  int dim = 0;
  __device__ void operator()(const int64_t (&o)[3]) const {
    const int64_t id = index[o[1]];
    if (index_math::in_range(id, dim_size)) atomic_add(dst + o[2] + id * dim_stride, src[o[0]]);
    else record_error(flag, kErrIndex, kOpScatterAdd, dim, id, dim_size);
  }
};

template <class Body>
void gather_scatter(DeviceContext& ctx, const RawTensor& x, int64_t dim, const RawTensor& index, const RawTensor& other,
                    Body body) {
  Shape xs = x.strides();
  body.dim_stride = x.dim() ? xs[dim] : 0;
  body.dim_size = x.dim() ? x.shape()[dim] : 1;
  body.flag = ctx.error_flag();
  body.dim = static_cast<int>(dim);
  if (x.dim()) xs[dim] = 0;
  launch_strided<3>(ctx.stream(), index.shape(), {&other.strides(), &index.strides(), &xs}, body);
}

}  // namespace

void CudaBackend::index_select(const RawTensor& x, int64_t dim, const RawTensor& index, const RawTensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  DeviceGuard guard(ctx_.device());
  const RowView r = rows_of(x, dim);
  dispatch_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    launch_flat(ctx_.stream(), n,
                IndexSelectFlat<T>{x.data<T>(), index.data<int64_t>(), out.data<T>(), r.D, index.numel(), r.inner,
                                   ctx_.error_flag(), static_cast<int>(dim)});
  });
}

void CudaBackend::index_add(const RawTensor& dst, int64_t dim, const RawTensor& index, const RawTensor& src) {
  const int64_t n = src.numel();
  if (n == 0) return;
  DeviceGuard guard(ctx_.device());
  const RowView r = rows_of(dst, dim);
  dispatch_dtype(dst.dtype(), [&](auto t) {
    using T = decltype(t);
    launch_flat(ctx_.stream(), n,
                IndexAddFlat<T>{dst.data<T>(), index.data<int64_t>(), src.data<T>(), r.D, index.numel(), r.inner,
                                ctx_.error_flag(), static_cast<int>(dim)});
  });
}

void CudaBackend::gather(const RawTensor& x, int64_t dim, const RawTensor& index, const RawTensor& out) {
  if (out.numel() == 0) return;
  DeviceGuard guard(ctx_.device());
  dispatch_dtype(x.dtype(), [&](auto t) {
    using T = decltype(t);
    gather_scatter(ctx_, x, dim, index, out, GatherStrided<T>{x.data<T>(), index.data<int64_t>(), out.data<T>()});
  });
}

void CudaBackend::scatter_add(const RawTensor& dst, int64_t dim, const RawTensor& index, const RawTensor& src) {
  if (src.numel() == 0) return;
  DeviceGuard guard(ctx_.device());
  dispatch_dtype(dst.dtype(), [&](auto t) {
    using T = decltype(t);
    gather_scatter(ctx_, dst, dim, index, src,
                   ScatterAddStrided<T>{dst.data<T>(), index.data<int64_t>(), src.data<T>()});
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
