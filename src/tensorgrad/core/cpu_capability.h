// core/cpu_capability.h: which SIMD code path the CPU backend's hot loops run (baseline x86-64,
// AVX2 + FMA, AVX-512), detected once from the CPU and overridable at run time. The loops and their
// dispatch live in backend/cpu/cpu_backend.h and backend/cpu/kernels.inc (Note [CPU capabilities]);
// detection and the TG_CPU_CAPABILITY variable in core/cpu_capability.cpp. tg::info() reports it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tg {

/// Code paths of the CPU loops, each a superset of the one before. Names: "baseline", "avx2", "avx512".
enum class CpuCapability : uint8_t { Baseline = 0, Avx2 = 1, Avx512 = 2 };

/// The path CPU loops use now. Default: TG_CPU_CAPABILITY when set, else the best this CPU supports.
/// An unknown name or a path this CPU cannot run in TG_CPU_CAPABILITY throws CpuCapabilityError here
/// and at every CPU kernel call, never a silent fallback.
CpuCapability cpu_capability();
/// Switches the path for every thread's later kernel calls (a loop already running keeps its path).
/// Throws CpuCapabilityError, naming what this CPU supports, when it cannot run `c` / for a bad name.
void set_cpu_capability(CpuCapability c);
/// The same by name: "baseline", "avx2" or "avx512" (CpuCapabilityError for any other).
void set_cpu_capability(const std::string& name);
/// The best path this CPU (and its operating system) supports.
CpuCapability best_cpu_capability();
/// Every path this CPU supports, baseline first.
std::vector<CpuCapability> supported_cpu_capabilities();
/// "baseline", "avx2" or "avx512".
const char* cpu_capability_name(CpuCapability c);
/// The name of cpu_capability().
const char* cpu_capability_name();

}  // namespace tg
