// backend/cuda/random.cu: Backend::random on CUDA: element i of a draw is philox::sample<T>(dist, seed, offset + i)
// from kernels/philox.h, the very formula the CPU loop in backend/cpu/random.cpp runs, so manual_seed
// gives the same values on both devices. Compiled with -fmad=false (CMakeLists.txt) so that no
// multiply-add is fused differently from the CPU; the remaining difference is the last-ulp accuracy
// of the device's double log/cos (float32 results are identical in practice). Inside a CUDA graph
// capture the seed and offset come from device memory instead (RandomFromSlot).
#include "tensorgrad/backend/cuda/kernels.cuh"
#include "tensorgrad/kernels/philox.h"

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

}  // namespace

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
