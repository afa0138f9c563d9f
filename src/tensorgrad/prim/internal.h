/// \file
/// prim/internal.h: the checks and the conversion the files of prim/ share. Not part of the prim API:
/// no header outside prim/ includes it.
/// \cond INTERNAL
#pragma once
#include <cstdint>

#include "tensorgrad/core/raw_tensor.h"

namespace tg {
namespace prim {

/// Error naming op when t is undefined.
void check_defined(const char* op, const RawTensor& t);
/// DTypeError naming op when index is not int64.
void check_int64_index(const char* op, const RawTensor& index);
/// Host-side range check of a CPU index tensor against [0, size) along dim; a CUDA index is checked
/// by the kernels (Note [Device error flag] in backend/cuda/softmax_loss.cu).
void check_index_range(const char* op, const RawTensor& index, int64_t size, int64_t dim);
/// Error when an integer dtype cannot hold value after truncation (NaN, infinities, out of range).
void check_representable(const char* op, double value, DType dtype);
/// t converted to dtype (t itself when it has it), broadcast and permuted layouts kept (prim/promote.cpp).
RawTensor as_dtype(const RawTensor& t, DType dtype);
/// t in float32 when it is a float16 or bfloat16 tensor, else t itself (also when undefined): the
/// operands of the kernels that exist for float32 and float64 only (Note [Low precision through
/// float32] in prim/blas.cpp; prim/promote.cpp).
RawTensor through_float32(const RawTensor& t);
/// out (M, N), contiguous, = a (M, K) . b (K, N): 2-D, of one dtype Backend::gemm takes and one device, shapes
/// already checked (prim/blas.cpp). accumulate adds out's values instead; a bias (N, contiguous) is
/// added to every row instead (Note [Bias folded into the GEMM]). For callers that reuse one output
/// buffer (addmm, the recurrent time loop in prim/rnn.cpp).
void gemm_into(const RawTensor& a, const RawTensor& b, const RawTensor& out, bool accumulate,
               const RawTensor& bias = RawTensor());

}  // namespace prim
}  // namespace tg
/// \endcond
