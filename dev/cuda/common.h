// dev/cuda/common.h: the harness shared by the kernel ladders of dev/cuda/: error checks, device
// buffers, a launch macro that also works on the CUDA emulator (tests/cuda_emulator/), seeded inputs,
// the check of a kernel's output against a CPU reference with a tolerance derived from the row
// length, median timing over repetitions (cudaEvents on a GPU), and the results table.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// ---- what differs between nvcc and the emulator

#if defined(TENSORGRAD_CUDA_EMULATE)
// Under the emulator a .cu file is plain C++: there is no <<<grid, block>>> syntax. The emulator's
// launcher runs every CUDA thread of the grid as a fiber on the host; the kernel comes last so that a
// template-id with commas needs no parentheses.
#define LAUNCH(grid, block, ...) ::tg_emu::make_launch(grid, block, 0, nullptr, &__VA_ARGS__, #__VA_ARGS__)
constexpr bool kOnEmulator = true;
// CUDA's built-in 16-byte vector type, which the emulator's headers do not declare.
struct alignas(16) float4 {
  float x, y, z, w;
};
#else
#define LAUNCH(grid, block, ...) __VA_ARGS__<<<grid, block>>>
constexpr bool kOnEmulator = false;
#endif

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;   // every lane of a warp takes part in the shuffle

// ---- errors

#define CUDA_CHECK(call) ::cuda_check((call), #call, __FILE__, __LINE__)
inline void cuda_check(cudaError_t err, const char* what, const char* file, int line) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", file, line, what, cudaGetErrorName(err), cudaGetErrorString(err));
  std::exit(1);
}

// Exit status 77 (CTest's SKIP_RETURN_CODE) when there is no usable device, unless TG_REQUIRE_CUDA=1
// asks for one (as tools/gpu_check.sh does): then it is a failure.
inline void require_device() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess && count > 0) return;
  const char* required = std::getenv("TG_REQUIRE_CUDA");
  const bool must = required != nullptr && std::strcmp(required, "1") == 0;
  std::printf("no CUDA device (%s)%s\n", err == cudaSuccess ? "0 devices" : cudaGetErrorString(err),
              must ? ": FAILED (TG_REQUIRE_CUDA=1)" : ": skipped");
  std::exit(must ? 1 : 77);
}

inline const char* device_name() {
  static cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  return prop.name;
}

// ---- memory

// A device array of n elements of T (cudaMalloc: at least 256-byte aligned, so 16-byte vector loads
// line up with element 0).
template <class T>
struct DeviceArray {
  T* ptr = nullptr;
  std::size_t n = 0;
  explicit DeviceArray(std::size_t count) : n(count) { CUDA_CHECK(cudaMalloc(&ptr, n * sizeof(T))); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(ptr); }
  void upload(const std::vector<T>& host) {
    CUDA_CHECK(cudaMemcpy(ptr, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> download() const {
    std::vector<T> host(n);
    CUDA_CHECK(cudaMemcpy(host.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }
  // Every byte 0xff: as float, a NaN, so an element a kernel forgot to write fails the check instead of
  // passing with the previous kernel's value.
  void poison() {
    CUDA_CHECK(cudaMemsetAsync(ptr, 0xff, n * sizeof(T), 0));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
};

// n floats uniform in [lo, hi), the same on every machine (a 64-bit LCG; no <random> distribution,
// whose output differs between standard libraries).
inline std::vector<float> uniform_floats(std::size_t n, float lo, float hi, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t s = seed * 2862933555777941757ull + 3037000493ull;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = lo + (hi - lo) * static_cast<float>(static_cast<double>(s >> 40) / static_cast<double>(1ull << 24));
  }
  return v;
}

inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

// ---- checking

// The relative tolerance for one output of a kernel that reduces a row of n floats. A float sum of n
// terms rounds n - 1 times: in the worst case the error grows like n * eps, but rounding errors have
// random signs, so in practice it grows like sqrt(n) * eps (and log2(n) * eps for a tree of partial
// sums). 8 sqrt(n) eps is far above what a correct kernel reaches, and still below 1/n, the average
// relative error of a kernel that drops one term of the row's sum, for rows up to about 10,000 floats.
// The constant 16 eps covers the elementwise steps (the subtraction, expf's 2 ulp, the division).
inline double row_tolerance(int n) {
  const double eps = 1.1920928955078125e-07;   // FLT_EPSILON
  return eps * (16.0 + 8.0 * std::sqrt(static_cast<double>(n)));
}

struct CheckResult {
  bool ok = true;
  double max_error = 0;   // the largest relative error seen
  long long bad = 0;      // outputs beyond the tolerance (NaN included)
  long long first_row = -1, first_col = -1;   // where the first of them is
  float got = 0;
  double want = 0;
};

// Compares got (a kernel's output, rows of `cols`) with want (the CPU reference, in double) element by
// element: |got - want| <= tol * |want|, written so that a NaN fails.
inline CheckResult check_output(const std::vector<float>& got, const std::vector<double>& want, int cols, double tol) {
  CheckResult r;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double err = std::fabs(static_cast<double>(got[i]) - want[i]) / std::max(std::fabs(want[i]), 1e-30);
    if (!(err <= tol)) {
      if (r.first_row < 0) {
        r.first_row = static_cast<long long>(i / static_cast<std::size_t>(cols));
        r.first_col = static_cast<long long>(i % static_cast<std::size_t>(cols));
        r.got = got[i];
        r.want = want[i];
      }
      ++r.bad;
      r.ok = false;
    }
    if (!(err <= r.max_error)) r.max_error = err;   // a NaN makes it NaN
  }
  return r;
}

// ---- timing

// Device memory written between repetitions so that each one starts with its data out of the L2 cache
// (tens of MB on recent GPUs, as large as the inputs): the time is then that of a first touch, as in a
// real network, not of data the previous repetition left in the cache.
struct CacheFlusher {
  char* ptr = nullptr;
  std::size_t bytes = 0;
  CacheFlusher() {
#if !defined(TENSORGRAD_CUDA_EMULATE)
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    bytes = std::max<std::size_t>(2 * static_cast<std::size_t>(prop.l2CacheSize), 64u << 20);
    CUDA_CHECK(cudaMalloc(&ptr, bytes));
#endif
  }
  CacheFlusher(const CacheFlusher&) = delete;
  CacheFlusher& operator=(const CacheFlusher&) = delete;
  ~CacheFlusher() {
    if (ptr != nullptr) cudaFree(ptr);
  }
  void flush() const {
    if (ptr != nullptr) CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, 0));
  }
};

// The median time of `reps` runs of launch() in milliseconds. On a GPU: cudaEvents recorded around
// each launch, on the stream, so that only the kernel is measured. On the emulator (which has no
// event timing): host time of the emulated run, which says nothing about a GPU.
template <class Launch>
double median_ms(const Launch& launch, int reps, const CacheFlusher& flusher) {
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    flusher.flush();
#if defined(TENSORGRAD_CUDA_EMULATE)
    CUDA_CHECK(cudaDeviceSynchronize());
    const auto t0 = std::chrono::steady_clock::now();
    launch();
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
#else
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventRecord(start, 0));
    launch();
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(stop, 0));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float elapsed = 0;
    CUDA_CHECK(cudaEventElapsedTime(&elapsed, start, stop));
    ms.push_back(elapsed);
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
#endif
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// ---- the table

inline void print_table_header(const char* title) {
  std::printf("\n%s\n", title);
  std::printf("  %-44s %6s %11s %9s  %s\n", "kernel", "block", "median ms", "GB/s", "check against the CPU reference");
}

// One row. bytes: the traffic the op needs at the least (each input read once, each output written
// once), so GB/s says how close a kernel comes to the memory bandwidth, whatever it really moves.
inline void print_table_row(const char* kernel, int block, double ms, double bytes, const CheckResult& c, double tol) {
  char check[160];
  if (c.ok)
    std::snprintf(check, sizeof check, "ok (max rel err %.1e, tol %.1e)", c.max_error, tol);
  else
    std::snprintf(check, sizeof check, "MISMATCH: %lld outputs, first at row %lld, col %lld: %.8g, want %.8g "
                  "(tol %.1e)", c.bad, c.first_row, c.first_col, static_cast<double>(c.got), c.want, tol);
  std::printf("  %-44s %6d %11.4f %9.1f  %s\n", kernel, block, ms, bytes / (ms * 1e6), check);
}
