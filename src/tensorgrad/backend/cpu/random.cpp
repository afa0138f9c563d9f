// backend/cpu/random.cpp: the random family of the CPU backend: Philox draws (kernels/philox.h), the very
// formula the CUDA twin backend/cuda/random.cu runs, so that a seed gives the same numbers on both.
#include "tensorgrad/backend/cpu/cpu_backend.h"

namespace tg {
namespace cpu {

void CpuBackend::random(const philox::Distribution& dist, uint64_t seed, uint64_t offset, const RawTensor& out) {
  dispatch_dtype(out.dtype(), [&](auto t) {
    using T = decltype(t);
    T* p = out.data<T>();
    parallel_for(out.numel(), 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        p[i] = philox::sample<T>(dist, seed, offset + static_cast<uint64_t>(i));
    });
  });
}

}  // namespace cpu
}  // namespace tg
