// core/cpu_capability.cpp: detecting what the CPU can run, the TG_CPU_CAPABILITY variable and
// tg::set_cpu_capability (core/cpu_capability.h). The loop sets these choose between, and the
// dispatch that reads cpu_capability() once per kernel call, are in backend/cpu/cpu_backend.h (Note [CPU
// capabilities]).
#include "tensorgrad/core/cpu_capability.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>

#include "tensorgrad/core/error.h"
#include "tensorgrad/core/macros.h"

#if TG_X86_SIMD
#include <cpuid.h>
#endif

namespace tg {
namespace {

constexpr CpuCapability kAll[] = {CpuCapability::Baseline, CpuCapability::Avx2, CpuCapability::Avx512};

/// Whether this CPU and its OS run every instruction set the loop set for `c` is compiled with (the
/// target strings of backend/cpu/cpu_backend.h). __builtin_cpu_supports also checks through XGETBV that
/// the OS saves the YMM / ZMM registers. F16C (CPUID leaf 1, ECX bit 29) is read with cpuid.h, as
/// clang 14's __builtin_cpu_supports does not know it.
bool cpu_runs(CpuCapability c) {
#if TG_X86_SIMD
  __builtin_cpu_init();
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                    __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") && f16c;
  switch (c) {
    case CpuCapability::Baseline: return true;
    case CpuCapability::Avx2: return avx2;
    case CpuCapability::Avx512:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512cd");
  }
  return false;
#else
  return c == CpuCapability::Baseline;
#endif
}

std::string supported_list() {
  std::string s;
  for (CpuCapability c : supported_cpu_capabilities()) s += (s.empty() ? "" : ", ") + std::string(cpu_capability_name(c));
  return s;
}

/// The capability called `name` (case-insensitive); throws CpuCapabilityError for unknown names and
/// for paths this CPU cannot run. `who` starts the message.
CpuCapability parse(const std::string& who, const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  for (CpuCapability c : kAll) {
    if (lower != cpu_capability_name(c)) continue;
    TG_CHECK(cpu_runs(c), CpuCapabilityError, who, ": this CPU cannot run the ", cpu_capability_name(c),
             " code path; it supports: ", supported_list());
    return c;
  }
  throw CpuCapabilityError(detail::cat(who, ": unknown CPU capability \"", name,
                                       "\" (names: baseline, avx2, avx512); this CPU supports: ", supported_list()));
}

// -1 until the first cpu_capability() or set_cpu_capability() chooses.
std::atomic<int> g_active{-1};

}  // namespace

const char* cpu_capability_name(CpuCapability c) {
  switch (c) {
    case CpuCapability::Baseline: return "baseline";
    case CpuCapability::Avx2: return "avx2";
    case CpuCapability::Avx512: return "avx512";
  }
  return "unknown";
}

const char* cpu_capability_name() { return cpu_capability_name(cpu_capability()); }

std::vector<CpuCapability> supported_cpu_capabilities() {
  std::vector<CpuCapability> out;
  for (CpuCapability c : kAll)
    if (cpu_runs(c)) out.push_back(c);
  return out;
}

CpuCapability best_cpu_capability() {
  static const CpuCapability best = supported_cpu_capabilities().back();
  return best;
}

CpuCapability cpu_capability() {
  const int v = g_active.load(std::memory_order_relaxed);
  if (v >= 0) return static_cast<CpuCapability>(v);
  // First use: TG_CPU_CAPABILITY (an empty value counts as unset), else the best path. A bad value
  // throws here and is never stored, so every later kernel call throws too.
  const char* env = std::getenv("TG_CPU_CAPABILITY");
  const CpuCapability c = env != nullptr && *env != '\0'
                              ? parse(std::string("TG_CPU_CAPABILITY=") + env, env)
                              : best_cpu_capability();
  int expected = -1;   // a concurrent set_cpu_capability wins
  g_active.compare_exchange_strong(expected, static_cast<int>(c), std::memory_order_relaxed);
  return static_cast<CpuCapability>(g_active.load(std::memory_order_relaxed));
}

void set_cpu_capability(CpuCapability c) {
  TG_CHECK(static_cast<unsigned>(c) <= 2u, CpuCapabilityError,
           "set_cpu_capability: unknown capability value ", static_cast<int>(c));
  TG_CHECK(cpu_runs(c), CpuCapabilityError, "set_cpu_capability: this CPU cannot run the ", cpu_capability_name(c),
           " code path; it supports: ", supported_list());
  g_active.store(static_cast<int>(c), std::memory_order_relaxed);
}

void set_cpu_capability(const std::string& name) {
  g_active.store(static_cast<int>(parse("set_cpu_capability", name)), std::memory_order_relaxed);
}

}  // namespace tg
