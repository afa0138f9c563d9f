// backend/cpu/runtime.cpp: the CPU backend object and the process-wide CPU settings (thread count,
// flush-to-zero), as backend/cuda/runtime.cu holds the CUDA backends and their contexts. The kernel families
// are in the other files of backend/cpu/ (backend/cpu/cpu_backend.h).
#include "tensorgrad/backend/cpu/cpu_backend.h"

namespace tg {

Backend& cpu_backend() {
  static auto* b = new cpu::CpuBackend();   // never destroyed: see Note [CPU caching allocator]
  return *b;
}

void set_num_threads(int n) { parallel::set_num_threads(n); }

bool set_flush_denormal(bool on) {
  cpu::g_flush_denormal.store(on, std::memory_order_relaxed);
  cpu::apply_flush_denormal(on);
#ifdef TG_HAVE_MXCSR
  return true;
#else
  return !on;
#endif
}

int get_num_threads() { return parallel::num_threads(); }

}  // namespace tg
