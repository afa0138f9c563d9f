// prim/blas.cpp: matrix products: matmul (2-D and batched 3-D), addmm (linear's forward with its
// bias folded in) and matmul_row_sums (linear's weight and bias gradients), through Backend::gemm.
#include "tensorgrad/prim/prim.h"

#include <algorithm>
#include <limits>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/internal.h"

namespace tg {
namespace prim {

namespace {
struct Operand : GemmOperand {
  RawTensor keep;   // holds a contiguous copy alive when one was needed
};

/// How the BLAS can read the (R, C) matrices of t (batch dim first when 3-D) without copying.
Operand as_blas_operand(const RawTensor& t) {
  const int64_t nd = t.dim();
  const int64_t R = t.shape()[nd - 2], C = t.shape()[nd - 1];
  const int64_t sr = t.strides()[nd - 2], sc = t.strides()[nd - 1];
  const int64_t bs = nd == 3 && t.shape()[0] > 1 ? t.strides()[0] : 0;
  constexpr int64_t kLdMax = std::numeric_limits<int>::max();   // the BLAS takes leading dims as int
  if ((C <= 1 || sc == 1) && (R <= 1 || (sr >= std::max<int64_t>(C, 1) && sr <= kLdMax)))
    return {{t.raw_data(), false, R <= 1 ? std::max<int64_t>(C, 1) : sr, bs}, RawTensor()};
  if ((R <= 1 || sr == 1) && (C <= 1 || (sc >= std::max<int64_t>(R, 1) && sc <= kLdMax)))
    return {{t.raw_data(), true, C <= 1 ? std::max<int64_t>(R, 1) : sc, bs}, RawTensor()};
  // A zero-size view counts as contiguous whatever its strides: clone it, or this would recurse forever.
  RawTensor c = t.numel() == 0 ? t.clone() : t.contiguous();
  Operand o = as_blas_operand(c);
  o.keep = c;
  return o;
}
}  // namespace

// Note [Low precision through float32]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The kernel families that accumulate across elements (matrix products, softmax, cross-entropy) and
// the optimizer updates exist for float32 and float64 only (dispatch_only in the backends). A float16
// or bfloat16 operand is converted to float32 here, the float32 kernel runs, and the result is
// rounded back once: float32 accumulation, as PyTorch's half kernels do internally, written once for
// both devices. The exception is the matrix product on CUDA, where cuBLAS multiplies 16-bit operands
// itself with float32 accumulation and one rounding, on tensor cores (Note [16-bit GEMMs on CUDA] in
// backend/cuda/blas.cpp), and bfloat16 on a CPU with AVX512_BF16, where oneDNN's bfloat16 matmul multiplies
// them (Note [bfloat16 GEMMs through oneDNN] in backend/cpu/blas.cpp): matmul, addmm and
// matmul_row_sums convert only where Backend::gemm_takes says no (gemm_through_float32): on the CPU,
// float16 always and bfloat16 without AVX512_BF16, as Debian's OpenBLAS has no 16-bit GEMM and
// oneDNN's bfloat16 kernels start at AVX-512 (under autocast, matmul and linear skip the round trip
// through 16-bit copies there: Note [Autocast products through float32] in ops/linalg.cpp).
// Elementwise ops, reductions and indexing run natively in every dtype (computing in float: Note
// [Half precision arithmetic] in core/half.h). The optimizers keep float32 master weights for 16-bit
// parameters (optim/optimizer.h).

bool products_through_float32(DType dtype, Device device) {
  return is_low_precision(dtype) && !backend_for(device).gemm_takes(dtype);
}

namespace {
/// Whether a product of a and b runs in float32 on converted operands (Note [Low precision through
/// float32]): 16-bit operands of one dtype that the device's gemm does not take.
bool gemm_through_float32(const RawTensor& a, const RawTensor& b) {
  return products_through_float32(a.dtype(), a.device()) && a.dtype() == b.dtype();
}

/// Checks a (M, K) or (B, M, K) and b (K, N) or (B, K, N) for matmul and the ops built on it (`name` in
/// messages): defined, one floating dtype and device, matching K, batches that broadcast, sizes the
/// BLAS takes. RawTensors of 16-bit dtypes pass: the callers convert them first.
void check_matmul(const char* name, const RawTensor& a, const RawTensor& b) {
  check_defined(name, a);
  check_defined(name, b);
  check_same_device(name, a, b);
  TG_CHECK((a.dim() == 2 || a.dim() == 3) && (b.dim() == 2 || b.dim() == 3), ShapeError,
           name, ": expected 2-D or 3-D tensors, got ", a.dim(), "-D and ", b.dim(), "-D (shapes ",
           shape_str(a.shape()), " and ", shape_str(b.shape()), ")");
  check_same_dtype(name, a, b);
  check_floating(name, a);
  const int64_t M = a.shape()[a.dim() - 2], K = a.shape()[a.dim() - 1];
  const int64_t K2 = b.shape()[b.dim() - 2], N = b.shape()[b.dim() - 1];
  TG_CHECK(K == K2, ShapeError, name, ": mat1 and mat2 shapes cannot be multiplied (", shape_x(a.shape()), " and ",
           shape_x(b.shape()), ")");
  const int64_t Ba = a.dim() == 3 ? a.shape()[0] : 1, Bb = b.dim() == 3 ? b.shape()[0] : 1;
  TG_CHECK(Ba == Bb || Ba == 1 || Bb == 1, ShapeError, name, ": batch sizes ", Ba, " and ", Bb,
           " cannot be broadcast (shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()), ")");
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  TG_CHECK(M <= kIntMax && N <= kIntMax && K <= kIntMax, ShapeError,
           name, ": matrix dimensions above 2^31-1 are not supported (", shape_x(a.shape()), " and ",
           shape_x(b.shape()), ")");
}

/// The GEMM out (B, M, N) = a . b for checked a and b with K > 0; oa and ob (from as_blas_operand)
/// must outlive the call.
GemmArgs gemm_args(const Operand& oa, const Operand& ob, int64_t batch, int64_t M, int64_t N, int64_t K,
                   const RawTensor& out) {
  return make_gemm(out.dtype(), batch, M, N, K, oa, ob, out.raw_data(), N, M * N);
}
}  // namespace

RawTensor matmul(const RawTensor& a, const RawTensor& b) {
  check_defined("matmul", a);
  check_defined("matmul", b);
  if (gemm_through_float32(a, b)) return matmul(as_dtype(a, kFloat32), as_dtype(b, kFloat32)).to(a.dtype());
  check_matmul("matmul", a, b);
  const int64_t M = a.shape()[a.dim() - 2], K = a.shape()[a.dim() - 1], N = b.shape()[b.dim() - 1];
  const int64_t Ba = a.dim() == 3 ? a.shape()[0] : 1, Bb = b.dim() == 3 ? b.shape()[0] : 1;
  const int64_t B = Ba == 1 ? Bb : Ba;   // broadcasting: 1 stretches, 0 does not (max would make 0 and 1 give 1)
  RawTensor out = (a.dim() == 3 || b.dim() == 3) ? RawTensor::empty({B, M, N}, a.dtype(), a.device())
                                              : RawTensor::empty({M, N}, a.dtype(), a.device());
  if (out.numel() == 0) return out;
  if (K == 0) {   // empty sums: zeros, without handing the BLAS pointers into empty storages
    backend_for(a.device()).fill(out, 0.0);
    return out;
  }
  const Operand oa = as_blas_operand(a), ob = as_blas_operand(b);
  backend_for(a.device()).gemm(gemm_args(oa, ob, B, M, N, K, out));
  return out;
}

// Note [Bias folded into the GEMM]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// linear's forward, y = x W^T + b, and its weight and bias gradients, dW = g^T x and db = the column
// sums of g, are each a GEMM plus a bias pass: a broadcast add, or a column sum (on CUDA two launches
// when g is tall). addmm and matmul_row_sums hand the pass to Backend::gemm_epilogue with the GEMM:
// - CUDA folds it into the GEMM's own launch with cuBLASLt's epilogues, CUBLASLT_EPILOGUE_BIAS and
//   BGRADB (Note [cuBLASLt epilogues], backend/cuda/blas.cpp). A tutorial MLP training step drops from 15
//   launches at batch 64 and 17 at batch 1024 to 11 at both (tests/test_cuda.cpp).
// - The CPU copies the bias into the result's rows and lets the BLAS accumulate onto it (beta = 1),
//   and sums the rows in the same call (backend/cpu/blas.cpp): one dispatch instead of two.
// A backend that cannot fold (cuBLASLt missing or refusing the dtype, layout or epilogue, or switched
// off with tg::cuda::detail::set_gemm_epilogues) returns false, and the pass runs here as its own op:
// the bias copied into the rows with the GEMM accumulating onto it, or a sum over the rows. float16
// and bfloat16 fold in float32 (Note [Low precision through float32]): the bias is added before the
// one rounding, on the CPU through float32 and on CUDA in cuBLASLt's float32 compute. linear folds only
// a bias of x's dtype and device (ops/linalg.cpp).
RawTensor addmm(const RawTensor& bias, const RawTensor& a, const RawTensor& b) {
  check_defined("addmm", bias);
  check_defined("addmm", a);
  check_defined("addmm", b);
  if (gemm_through_float32(a, b) && a.dtype() == bias.dtype())
    return addmm(as_dtype(bias, kFloat32), as_dtype(a, kFloat32), as_dtype(b, kFloat32)).to(a.dtype());
  check_matmul("addmm", a, b);
  TG_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError, "addmm: expected 2-D matrices, got shapes ", shape_str(a.shape()),
           " and ", shape_str(b.shape()));
  check_same_device("addmm", a, bias);
  check_same_dtype("addmm", a, bias);
  const int64_t M = a.shape()[0], N = b.shape()[1];
  TG_CHECK(bias.shape() == Shape{N}, ShapeError, "addmm: expected bias of shape [", N, "] for the product ",
           shape_x(a.shape()), " and ", shape_x(b.shape()), ", got ", shape_str(bias.shape()));
  RawTensor out = RawTensor::empty({M, N}, a.dtype(), a.device());
  gemm_into(a, b, out, /*accumulate=*/false, bias.contiguous());
  return out;
}

void gemm_into(const RawTensor& a, const RawTensor& b, const RawTensor& out, bool accumulate, const RawTensor& bias) {
  const int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  if (M == 0 || N == 0) return;
  Backend& backend = backend_for(a.device());
  if (K == 0) {   // empty sums: the bias alone, or zeros, without handing the BLAS pointers into empty storages
    if (bias.defined()) backend.copy(bias.expand({M, N}), out);
    else if (!accumulate) backend.fill(out, 0.0);
    return;
  }
  const Operand oa = as_blas_operand(a), ob = as_blas_operand(b);
  GemmArgs g = gemm_args(oa, ob, 1, M, N, K, out);
  if (bias.defined()) {
    GemmEpilogue e;
    e.bias = bias.raw_data();
    if (backend.gemm_epilogue(g, e)) return;
    backend.copy(bias.expand({M, N}), out);   // the bias in every row, then out += a . b
    accumulate = true;
  }
  g.beta = accumulate ? 1 : 0;
  backend.gemm(g);
}

std::pair<RawTensor, RawTensor> matmul_row_sums(const RawTensor& a, const RawTensor& b) {
  check_defined("matmul", a);
  check_defined("matmul", b);
  if (gemm_through_float32(a, b)) {
    std::pair<RawTensor, RawTensor> r = matmul_row_sums(as_dtype(a, kFloat32), as_dtype(b, kFloat32));
    return {r.first.to(a.dtype()), r.second.to(a.dtype())};
  }
  check_matmul("matmul", a, b);
  TG_CHECK(a.dim() == 2 && b.dim() == 2, ShapeError, "matmul: expected 2-D matrices, got shapes ",
           shape_str(a.shape()), " and ", shape_str(b.shape()));
  const int64_t M = a.shape()[0], K = a.shape()[1], N = b.shape()[1];
  if (M > 0 && N > 0 && K > 0) {
    RawTensor out = RawTensor::empty({M, N}, a.dtype(), a.device());
    RawTensor sums = RawTensor::empty({M}, a.dtype(), a.device());
    const Operand oa = as_blas_operand(a), ob = as_blas_operand(b);
    GemmEpilogue e;
    e.row_sums = sums.raw_data();
    if (backend_for(a.device()).gemm_epilogue(gemm_args(oa, ob, 1, M, N, K, out), e)) return {out, sums};
  }
  // The sums as a column sum of a^T: for linear's a = g^T, the sum of the contiguous g over its rows.
  return {matmul(a, b), sum_to(a.transpose(0, 1), {M})};
}

}  // namespace prim
}  // namespace tg
