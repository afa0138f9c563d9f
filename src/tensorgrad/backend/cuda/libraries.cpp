// backend/cuda/libraries.cpp: opens the CUDA libraries at run time (dlopen) and resolves cuBLAS's and
// cuBLASLt's entry points into one table each (backend/cuda/libraries.h); in the CUDA emulator build
// the tables point at the emulator's cuBLAS and cuBLASLt instead (tests/cuda_emulator/). NCCL is opened the same way (backend/cuda/loader.h)
// by backend/cuda/nccl.cpp. Host C++ (g++). The runtime API and the kernels
// are in backend/cuda/runtime.cu and the other .cu files; the calls through the table are in backend/cuda/blas.cpp
// and backend/cuda/runtime.cu.
#include "tensorgrad/backend/cuda/libraries.h"
#include "tensorgrad/backend/cuda/loader.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tensorgrad/core/error.h"

#ifndef TENSORGRAD_CUDA_LIBDIR
#define TENSORGRAD_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

namespace tg {
namespace cuda {
namespace detail {

// Note [CUDA at run time]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A program linked against a CUDA-enabled tensorgrad must start, and fall back to the CPU, on a
// machine without a GPU, a driver or a CUDA toolkit; `ldd` of it lists no CUDA library. So:
// - The CUDA runtime is linked statically (libcudart_static, redistributable, installed next to
//   libtensorgrad.a). It loads the driver (libcuda.so.1) with dlopen on the first runtime call, and
//   reports cudaErrorInsufficientDriver / cudaErrorNoDevice when there is none.
// - cuBLAS, whose shared libraries map about 600 MB and cost any program linked with them about
//   157 MB of resident memory at start-up, is opened here with dlopen when the availability probe finds a device,
//   and every entry point we call goes through CublasApi. The probe treats a missing cuBLAS like a
//   missing driver: is_available() is false and info() names the library and where it was looked for.
// - cuBLASLt (libcublasLt.so.N, which libcublas.so.N itself needs, so it is already mapped by then) is
//   opened the same way on the first GEMM with an epilogue (Note [cuBLASLt epilogues],
//   backend/cuda/blas.cpp). It is optional: without it those GEMMs take the cuBLAS path, and info() says so.
// - NCCL (libnccl.so.2) is opened the same way, but only when a program asks for the "nccl" process
//   group or whether it is available (Note [NCCL at run time], backend/cuda/nccl.cpp).
// - The kernels are compiled into libtensorgrad.a (fat binaries for the configured architectures);
//   with lazy module loading they cost nothing until the first launch.
// The alternative, the whole CUDA backend as a dlopen'ed module, would need the engine's symbols
// exported from the user's executable or a second copy of the engine's global state in the module.
// Search order for a library: the dynamic loader's own (LD_LIBRARY_PATH, ld.so.cache), then
// $CUDA_HOME/lib64, then the toolkit directory the library was built against.

namespace {

struct Cublas {
  LibraryStatus status;
  CublasApi api;
};

struct CublasLt {
  LibraryStatus status;
  CublasLtApi api;
};

#if defined(TENSORGRAD_CUDA_EMULATE)
// The emulator build links the CUDA emulator's cuBLAS (tests/cuda_emulator/cublas.cpp): the table
// points at it and nothing is opened.
constexpr const char* kEmulator = "the tensorgrad CUDA emulator, tests/cuda_emulator/";

Cublas* load_cublas() {
  auto* c = new Cublas();   // never destroyed, as below
  c->status.loaded = true;
  c->status.path = std::string("reference GEMM of ") + kEmulator;
  CublasApi& a = c->api;
  a.create = &::cublasCreate_v2;
  a.set_stream = &::cublasSetStream_v2;
  a.set_workspace = &::cublasSetWorkspace_v2;
  a.sgemm = &::cublasSgemm_v2;
  a.dgemm = &::cublasDgemm_v2;
  a.sgemm_strided_batched = &::cublasSgemmStridedBatched;
  a.dgemm_strided_batched = &::cublasDgemmStridedBatched;
  a.gemm_strided_batched_ex = &::cublasGemmStridedBatchedEx;
  a.status_name = &::cublasGetStatusName;
  a.status_string = &::cublasGetStatusString;
  a.get_property = &::cublasGetProperty;
  return c;
}

CublasLt* load_cublaslt() {
  auto* c = new CublasLt();   // never destroyed, as below
  c->status.loaded = true;
  c->status.path = std::string("reference matmul of ") + kEmulator;
  CublasLtApi& a = c->api;
  a.create = &::cublasLtCreate;
  a.get_version = &::cublasLtGetVersion;
  a.desc_create = &::cublasLtMatmulDescCreate;
  a.desc_destroy = &::cublasLtMatmulDescDestroy;
  a.desc_set = &::cublasLtMatmulDescSetAttribute;
  a.layout_create = &::cublasLtMatrixLayoutCreate;
  a.layout_destroy = &::cublasLtMatrixLayoutDestroy;
  a.preference_create = &::cublasLtMatmulPreferenceCreate;
  a.preference_destroy = &::cublasLtMatmulPreferenceDestroy;
  a.preference_set = &::cublasLtMatmulPreferenceSetAttribute;
  a.heuristic = &::cublasLtMatmulAlgoGetHeuristic;
  a.matmul = &::cublasLtMatmul;
  return c;
}

LibraryStatus* open_driver() { return new LibraryStatus{true, kEmulator, ""}; }
#else
std::string loaded_path(void* handle) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr && map->l_name[0] != 0)
    return map->l_name;
  return "(path unknown)";
}

/// dlopen of the first of `names` that loads; *status says which file or, when none did, each error.
void* open_first(const std::vector<std::string>& names, LibraryStatus* status) {
  for (const std::string& name : names) {
    dlerror();
    void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h != nullptr) {
      status->loaded = true;
      status->path = loaded_path(h);
      status->detail.clear();
      return h;
    }
    const char* err = dlerror();
    if (!status->detail.empty()) status->detail += "; ";
    status->detail += err != nullptr ? err : (name + ": cannot be opened");
  }
  return nullptr;
}

/// The places a CUDA library `file` (e.g. "libcublas.so.13") is looked for, in order.
std::vector<std::string> candidates(const std::string& file) {
  std::vector<std::string> names{file};
  if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && home[0] != 0)
    names.push_back(std::string(home) + "/lib64/" + file);
  const std::string built = std::string(TENSORGRAD_CUDA_LIBDIR) + "/" + file;
  if (built != names.back()) names.push_back(built);
  return names;
}

template <class F>
bool resolve(void* h, const char* symbol, F* slot, LibraryStatus* status) {
  dlerror();
  void* p = dlsym(h, symbol);
  if (p == nullptr) {
    status->loaded = false;
    if (!status->detail.empty()) status->detail += "; ";
    status->detail += tg::detail::cat(status->path, " has no symbol ", symbol);
    return false;
  }
  *slot = reinterpret_cast<F>(p);
  return true;
}

Cublas* load_cublas() {
  auto* c = new Cublas();   // never destroyed: the table is used until the process exits
  const std::string file = tg::detail::cat("libcublas.so.", CUBLAS_VER_MAJOR);
  void* h = open_first(candidates(file), &c->status);
  if (h == nullptr) return c;
  CublasApi& a = c->api;
  LibraryStatus* s = &c->status;
  const bool ok = resolve(h, "cublasCreate_v2", &a.create, s) & resolve(h, "cublasSetStream_v2", &a.set_stream, s) &
                  resolve(h, "cublasSetWorkspace_v2", &a.set_workspace, s) & resolve(h, "cublasSgemm_v2", &a.sgemm, s) &
                  resolve(h, "cublasDgemm_v2", &a.dgemm, s) &
                  resolve(h, "cublasSgemmStridedBatched", &a.sgemm_strided_batched, s) &
                  resolve(h, "cublasDgemmStridedBatched", &a.dgemm_strided_batched, s) &
                  resolve(h, "cublasGemmStridedBatchedEx", &a.gemm_strided_batched_ex, s) &
                  resolve(h, "cublasGetStatusName", &a.status_name, s) &
                  resolve(h, "cublasGetStatusString", &a.status_string, s) &
                  resolve(h, "cublasGetProperty", &a.get_property, s);
  if (!ok) c->status.loaded = false;
  return c;
}

CublasLt* load_cublaslt() {
  auto* c = new CublasLt();   // never destroyed: the table is used until the process exits
  const std::string file = tg::detail::cat("libcublasLt.so.", CUBLAS_VER_MAJOR);
  void* h = open_first(candidates(file), &c->status);
  if (h == nullptr) return c;
  CublasLtApi& a = c->api;
  LibraryStatus* s = &c->status;
  const bool ok = resolve(h, "cublasLtCreate", &a.create, s) & resolve(h, "cublasLtGetVersion", &a.get_version, s) &
                  resolve(h, "cublasLtMatmulDescCreate", &a.desc_create, s) &
                  resolve(h, "cublasLtMatmulDescDestroy", &a.desc_destroy, s) &
                  resolve(h, "cublasLtMatmulDescSetAttribute", &a.desc_set, s) &
                  resolve(h, "cublasLtMatrixLayoutCreate", &a.layout_create, s) &
                  resolve(h, "cublasLtMatrixLayoutDestroy", &a.layout_destroy, s) &
                  resolve(h, "cublasLtMatmulPreferenceCreate", &a.preference_create, s) &
                  resolve(h, "cublasLtMatmulPreferenceDestroy", &a.preference_destroy, s) &
                  resolve(h, "cublasLtMatmulPreferenceSetAttribute", &a.preference_set, s) &
                  resolve(h, "cublasLtMatmulAlgoGetHeuristic", &a.heuristic, s) &
                  resolve(h, "cublasLtMatmul", &a.matmul, s);
  if (!ok) c->status.loaded = false;
  return c;
}

LibraryStatus* open_driver() {
  auto* s = new LibraryStatus();
  // The runtime opens the same file; this handle only keeps it loaded and tells where it is.
  open_first({"libcuda.so.1"}, s);
  return s;
}
#endif

}  // namespace

#if !defined(TENSORGRAD_CUDA_EMULATE)
std::vector<std::string> library_candidates(const std::string& file) { return candidates(file); }
void* open_library(const std::vector<std::string>& names, LibraryStatus* status) { return open_first(names, status); }
bool resolve_symbol(void* handle, const char* symbol, void** slot, LibraryStatus* status) {
  return resolve(handle, symbol, slot, status);
}
#endif

namespace {

const Cublas* cublas_state() noexcept {
  try {
    static const Cublas* c = load_cublas();
    return c;
  } catch (...) {
    return nullptr;
  }
}

const CublasLt* cublaslt_state() noexcept {
  try {
    static const CublasLt* c = load_cublaslt();
    return c;
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

const LibraryStatus& driver_library() noexcept {
  static const LibraryStatus fallback{false, "", "out of memory while opening libcuda.so.1"};
  try {
    static const LibraryStatus* status = open_driver();
    return *status;
  } catch (...) {
    return fallback;
  }
}

const LibraryStatus& cublas_library() noexcept {
  static const LibraryStatus fallback{false, "", "out of memory while opening cuBLAS"};
  const Cublas* c = cublas_state();
  return c != nullptr ? c->status : fallback;
}

const CublasApi& cublas() {
  const Cublas* c = cublas_state();
  if (c == nullptr || !c->status.loaded)
    throw DeviceError(tg::detail::cat("cuBLAS could not be loaded (", c != nullptr ? c->status.detail : "out of memory",
                                      "): install the CUDA toolkit's cuBLAS or add its directory to LD_LIBRARY_PATH"));
  return c->api;
}

const LibraryStatus& cublaslt_library() noexcept {
  static const LibraryStatus fallback{false, "", "out of memory while opening cuBLASLt"};
  const CublasLt* c = cublaslt_state();
  return c != nullptr ? c->status : fallback;
}

const CublasLtApi* cublaslt() noexcept {
  const CublasLt* c = cublaslt_state();
  return c != nullptr && c->status.loaded ? &c->api : nullptr;
}

}  // namespace detail
}  // namespace cuda
}  // namespace tg
