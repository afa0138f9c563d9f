/// \file
/// kernels/index.h: the indexing family's shared rule (Note [Kernel families] in backend/backend.h):
/// which index values are in range. The CPU checks its indices on the host before the backend runs
/// (prim/index.cpp and prim/softmax_loss.cpp: index_select, index_add_, gather, scatter_add, cross_entropy's targets); the CUDA
/// kernels check theirs on the device (backend/cuda/index.cu, backend/cuda/softmax_loss.cu: Note [Device error flag]).
/// Both raise the same IndexError. Compiled by g++ and by nvcc, so: no dependencies.
#pragma once
#include <cstdint>

#include "tensorgrad/core/macros.h"

namespace tg {
/// \cond INTERNAL
namespace index_math {

/// Whether i indexes a dim of `size` elements: 0 <= i < size (no wrapping of negative values, as
/// PyTorch's index_select, gather and cross_entropy targets).
TG_HD bool in_range(int64_t i, int64_t size) { return i >= 0 && i < size; }

}  // namespace index_math
/// \endcond
}  // namespace tg
