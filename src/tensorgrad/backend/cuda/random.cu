// backend/cuda/random.cu: Backend::random on CUDA: element i of a draw is philox::sample<T>(dist, seed, offset + i)
// from kernels/philox.h, the very formula the CPU loop in backend/cpu/random.cpp runs, so manual_seed
// gives the same values on both devices. Compiled with -fmad=false (CMakeLists.txt) so that no
// multiply-add is fused differently from the CPU; the remaining difference is the last-ulp accuracy
// of the device's double log/cos (float32 results are identical in practice). Inside a CUDA graph
// capture the seed and offset come from device memory instead (RandomFromSlot). Also multinomial's
// draws with replacement (sample_categories_kernel), the CPU's arithmetic on the device.
#include "tensorgrad/backend/cuda/kernels.cuh"
#include "tensorgrad/kernels/philox.h"
#include "tensorgrad/kernels/sampling.h"

namespace tg {
namespace cuda {
namespace detail {
namespace {

/// One Philox block (10 rounds of 32-bit multiplies) plus a few double ops per element: compute-bound
/// on the double unit for Normal; writes 4 or 8 bytes per element, coalesced.
template <class T>
struct RandomFlat {
  T* out;
  philox::Distribution dist;
  uint64_t seed, offset;
  __device__ void operator()(int64_t i) const { out[i] = philox::sample<T>(dist, seed, offset + static_cast<uint64_t>(i)); }
};

/// RandomFlat inside a CUDA graph capture: the seed and the base offset are read from the device's
/// slot, which every replay rewrites, and `relative` is the draw's place after the capture's first
/// position (Note [CUDA graphs] in backend/cuda/graph.cu).
template <class T>
struct RandomFromSlot {
  T* out;
  philox::Distribution dist;
  const uint64_t* slot;
  uint64_t relative;
  __device__ void operator()(int64_t i) const {
    out[i] = philox::sample<T>(dist, slot[0], slot[1] + relative + static_cast<uint64_t>(i));
  }
};

/// Multinomial's draws with replacement, one block per row: the CPU's arithmetic step for step (Note
/// [Drawing categories in one pass] in backend/cpu/random.cpp, the rules of kernels/sampling.h), so that
/// the same uniforms give the same categories on both devices. The threads sum the row's blocks of 64
/// weights into `after`; thread 0 turns those into the running sums after each block, in order (the
/// last is the row's total); then each thread takes draws: the first block whose running sum is above
/// the skip bound by bisection (the running sums never decrease), then the CPU's walk from there. Compiled with -fmad=false, as this whole file: only adds, multiplies and a
/// divide, rounded as on the CPU.
template <class T>
__global__ void sample_categories_kernel(const T* probs, int64_t C, const double* u, int64_t S, int64_t* out,
                                         int64_t* status, double* after_all, int64_t blocks) {
  const int64_t r = blockIdx.x;
  const T* p = probs + r * C;
  double* after = after_all + r * blocks;
  __shared__ int negative;
  __shared__ double total_shared;
  if (threadIdx.x == 0) negative = 0;
  __syncthreads();
  bool neg = false;
  for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x) {
    const int64_t k0 = b * sampling::kBlock, k1 = k0 + sampling::kBlock <= C ? k0 + sampling::kBlock : C;
    after[b] = sampling::block_sum(p, k0, k1, &neg);
  }
  if (neg) negative = 1;
  __syncthreads();
  if (threadIdx.x == 0) {
    double run = 0;
    for (int64_t b = 0; b < blocks; ++b) after[b] = run = run + after[b];
    total_shared = run;
  }
  __syncthreads();
  const double total = total_shared;
  // a NaN or an infinity makes the total NaN or infinite
  const int64_t st = !isfinite(total) || negative ? 1 : !(total > 0) ? 2 : 0;
  if (threadIdx.x == 0) status[r] = st;
  if (st != 0) return;
  for (int64_t j = threadIdx.x; j < S; j += blockDim.x) {
    const double uj = u[r * S + j], bound = sampling::skip_bound(uj, total);
    int64_t lo = 0, hi = blocks - 1;   // the first block whose running sum is above the bound, or the last
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (after[mid] > bound) hi = mid;
      else lo = mid + 1;
    }
    int64_t found = -1;
    for (int64_t b = lo; b < blocks && found < 0; ++b) {
      if (after[b] <= bound && b + 1 < blocks) continue;
      const int64_t k0 = b * sampling::kBlock, k1 = k0 + sampling::kBlock <= C ? k0 + sampling::kBlock : C;
      found = sampling::walk_block(p, k0, k1, b == 0 ? 0.0 : after[b - 1], total, uj);
    }
    if (found < 0) found = sampling::last_positive(p, C);   // rounding left no running sum above u
    out[r * S + j] = found;
  }
}

}  // namespace

bool CudaBackend::sample_categories(const RawTensor& probs, const RawTensor& u, const RawTensor& out,
                                    const RawTensor& status) {
  const int64_t R = probs.shape()[0], C = probs.shape()[1], S = u.shape()[1];
  if (R == 0) return true;
  TG_CHECK(R <= INT32_MAX, ShapeError, "multinomial: ", R, " rows exceed the CUDA grid");
  DeviceGuard guard(ctx_.device());
  const int64_t blocks = (C + 63) / 64;
  const RawTensor after = RawTensor::empty({R, blocks}, kFloat64, probs.device());
  dispatch_only<kFloat32, kFloat64>(probs.dtype(), "multinomial", [&](auto tag) {
    using T = decltype(tag);
    TG_LAUNCH(static_cast<unsigned>(R), 256, 0, ctx_.stream(), sample_categories_kernel<T>)(
        probs.data<T>(), C, u.data<double>(), S, out.data<int64_t>(), status.data<int64_t>(), after.data<double>(),
        blocks);
    TG_CUDA_CHECK(cudaGetLastError());
  });
  return true;
}

void CudaBackend::random(const philox::Distribution& dist, uint64_t seed, uint64_t offset, const RawTensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  DeviceGuard guard(ctx_.device());
  const bool captured = ctx_.capture.on.load(std::memory_order_acquire);
  const uint64_t base = ctx_.capture.rng_base;
  TG_CHECK(!captured || offset >= base, CudaError,
           "a random draw inside a CUDA graph capture repeats the draw at offset ", offset,
           ", made before the capture began (at ", base, "): run the forward that drew it inside the capture too");
  dispatch_dtype(out.dtype(), [&](auto t) {
    using T = decltype(t);
    if (captured) launch_flat(ctx_.stream(), n, RandomFromSlot<T>{out.data<T>(), dist, ctx_.rng_slot, offset - base});
    else launch_flat(ctx_.stream(), n, RandomFlat<T>{out.data<T>(), dist, seed, offset});
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
