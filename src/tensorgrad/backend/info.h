// backend/info.h: tg::info(), one human-readable report of how this build runs on this machine
// (version, CPU code path, threads, BLAS, IDX reader, CUDA). Implemented in backend/info.cpp from the
// pieces that own each fact: core/cpu_capability.h, core/parallel.h, OpenBLAS, data/idx.h and
// tg::cuda::info().
#pragma once
#include <string>

namespace tg {

/// Several lines: "tensorgrad <version>", the CPU code path in use and the best one this CPU
/// supports, the CPU thread count, the BLAS (OpenBLAS's build and kernel configuration), whether
/// gzip IDX files can be read (zlib), then tg::cuda::info(). Throws CpuCapabilityError while
/// TG_CPU_CAPABILITY holds a bad value.
std::string info();

}  // namespace tg
