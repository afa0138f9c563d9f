// backend/cuda/random.cu: Backend::random on CUDA: element i of a draw is philox::sample<T>(dist, seed, offset + i)
// from kernels/philox.h, the very formula the CPU loop in backend/cpu/random.cpp runs, so manual_seed
// gives the same values on both devices. Compiled with -fmad=false (CMakeLists.txt) so that no
// multiply-add is fused differently from the CPU; the remaining difference is the last-ulp accuracy
// of the device's double log/cos (float32 results are identical in practice).
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

}  // namespace

void CudaBackend::random(const philox::Distribution& dist, uint64_t seed, uint64_t offset, const RawTensor& out) {
  const int64_t n = out.numel();
  if (n == 0) return;
  DeviceGuard guard(ctx_.device());
  dispatch_dtype(out.dtype(), [&](auto t) {
    using T = decltype(t);
    launch_flat(ctx_.stream(), n, RandomFlat<T>{out.data<T>(), dist, seed, offset});
  });
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
