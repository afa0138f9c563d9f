// backend/info.cpp: tg::info() (backend/info.h). Each line comes from the code that owns the fact; the
// CUDA line(s) are tg::cuda::info() verbatim (backend/cuda/runtime.cu, or the stub in backend/backend.cpp).
#include "tensorgrad/backend/info.h"

#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/backend/backend.h"
#include "tensorgrad/core/cpu_capability.h"
#include "tensorgrad/core/error.h"

#ifdef TENSORGRAD_HAVE_OPENBLAS
extern "C" char* openblas_get_config(void);
#endif

namespace tg {

std::string info() {
  std::string s = detail::cat("tensorgrad ", TENSORGRAD_VERSION, "\n");
  std::string supported;
  for (CpuCapability c : supported_cpu_capabilities())
    supported += (supported.empty() ? "" : ", ") + std::string(cpu_capability_name(c));
  s += detail::cat("CPU code path: ", cpu_capability_name(cpu_capability()), " (best on this CPU: ",
                   cpu_capability_name(best_cpu_capability()), "; supported: ", supported,
                   "; TG_CPU_CAPABILITY or tg::set_cpu_capability chooses)\n");
  s += detail::cat("CPU threads: ", get_num_threads(), "\n");
#ifdef TENSORGRAD_HAVE_OPENBLAS
  // OpenBLAS picks its own kernels for the CPU at load time (OPENBLAS_CORETYPE overrides that, for a
  // DYNAMIC_ARCH build); the config string names the core it chose.
  s += detail::cat("BLAS: ", openblas_get_config(), " (single-threaded per call, split over tensorgrad's pool)\n");
#else
  s += "BLAS: none (built-in blocked gemm)\n";
#endif
  s += backend_for(Device::cpu()).gemm_takes(kBFloat16)
           ? "16-bit products on the CPU: bfloat16 on oneDNN (AVX512_BF16), float16 through float32\n"
           : "16-bit products on the CPU: float16 and bfloat16 through float32 (Note [Low precision through float32])\n";
  s += TENSORGRAD_HAVE_ZLIB ? "IDX files: gzip (zlib) and plain\n"
                                 : "IDX files: plain only (built without zlib; gzip files raise IOError)\n";
  s += cuda::info();
  return s;
}

}  // namespace tg
