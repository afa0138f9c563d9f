// backend/cuda/loader.h: opening a CUDA library at run time by its file name, with the search order of
// Note [CUDA at run time], and resolving its entry points one by one; what backend/cuda/libraries.cpp does for
// cuBLAS, offered to backend/cuda/nccl.cpp for NCCL. Defined in backend/cuda/libraries.cpp, not in the CUDA emulator
// build (which opens nothing). Internal to backend/cuda/.
#pragma once
#include <string>
#include <vector>

#include "tensorgrad/backend/cuda/libraries.h"

namespace tg {
namespace cuda {
namespace detail {

/// The places a CUDA library `file` (e.g. "libnccl.so.2") is looked for, in order: the dynamic
/// loader's own, $CUDA_HOME/lib64, the toolkit directory tensorgrad was built against.
std::vector<std::string> library_candidates(const std::string& file);
/// dlopen of the first of `names` that loads; *status says which file or, when none did, each error.
void* open_library(const std::vector<std::string>& names, LibraryStatus* status);
/// dlsym of `symbol` into *slot; on failure status is marked not loaded and names the symbol.
bool resolve_symbol(void* handle, const char* symbol, void** slot, LibraryStatus* status);

}  // namespace detail
}  // namespace cuda
}  // namespace tg
