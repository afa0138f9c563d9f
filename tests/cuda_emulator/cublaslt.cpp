// tests/cuda_emulator/cublaslt.cpp: the CUDA emulator's cuBLASLt: handles, matmul descriptors, matrix
// layouts and preferences that validate their attributes (type size, value) as cuBLASLt documents, a
// heuristic that answers for the configurations emulated (float with float compute, double with
// double compute; epilogues DEFAULT, BIAS, BGRADA and BGRADB) and refuses the others with
// CUBLAS_STATUS_NOT_SUPPORTED, and a reference matmul (column-major, as cuBLASLt) that computes the
// product and its epilogue in double. Every matrix and the bias vector must lie in device memory of
// the handle's device (what a GPU would fault on). src/tensorgrad/backend/cuda/libraries.cpp points its table
// here in the emulator build.
#include <cstdint>
#include <cstring>
#include <set>
#include <string>

#include "cublasLt.h"
#include "emulator.h"
#include "tensorgrad/core/half.h"

struct cublasLtContext {
  int device;
};

struct cublasLtMatmulDescOpaque_t {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  int32_t pointer_mode = 0;   // CUBLASLT_POINTER_MODE_HOST
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N, transc = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  void* bias = nullptr;
  int64_t bias_batch_stride = 0;
  int32_t bias_type = -1;   // -1: the type of D
};

struct cublasLtMatrixLayoutOpaque_t {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
};

struct cublasLtMatmulPreferenceOpaque_t {
  uint32_t search_mode = 0;
  uint64_t max_workspace = 0;
};

namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

// The live objects of each kind: a destroyed or made-up descriptor is reported, not dereferenced.
template <class T>
std::set<const T*>& live() {
  static auto* s = new std::set<const T*>();   // never destroyed, like the handles
  return *s;
}

template <class T>
bool is_live(const T* p) {
  return p != nullptr && live<T>().count(p) != 0;
}

// An algo from the emulator's heuristic: a tag, then the problem it was chosen for.
constexpr uint64_t kAlgoTag = 0x746755746c416c67ull;

bool valid_op(int32_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

bool known_epilogue(uint32_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT:
    case CUBLASLT_EPILOGUE_RELU:
    case CUBLASLT_EPILOGUE_BIAS:
    case CUBLASLT_EPILOGUE_RELU_BIAS:
    case CUBLASLT_EPILOGUE_GELU:
    case CUBLASLT_EPILOGUE_BGRADA:
    case CUBLASLT_EPILOGUE_BGRADB: return true;
  }
  return false;
}

bool emulated_epilogue(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_DEFAULT || e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_BGRADA ||
         e == CUBLASLT_EPILOGUE_BGRADB;
}

std::string epilogue_name(uint32_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT: return "DEFAULT";
    case CUBLASLT_EPILOGUE_BIAS: return "BIAS";
    case CUBLASLT_EPILOGUE_BGRADA: return "BGRADA";
    case CUBLASLT_EPILOGUE_BGRADB: return "BGRADB";
  }
  return std::to_string(e);
}

std::size_t type_size(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_32F: return 4;
    case CUDA_R_64F: return 8;
    case CUDA_R_16F:
    case CUDA_R_16BF: return 2;
  }
  return 0;
}

/// One matmul problem, read from its descriptors: D (m, n) = op(A) (m, k) op(B) (k, n) [+ C] [epilogue].
struct Problem {
  uint64_t m = 0, n = 0, k = 0;
  cublasLtMatmulDescOpaque_t desc;
  cublasLtMatrixLayoutOpaque_t a, b, c, d;
  /// The bias vector's length for the epilogue (0: none): D's rows for BIAS and BGRADA, its columns for BGRADB.
  uint64_t bias_length() const {
    if (desc.epilogue == CUBLASLT_EPILOGUE_BIAS || desc.epilogue == CUBLASLT_EPILOGUE_BGRADA) return m;
    if (desc.epilogue == CUBLASLT_EPILOGUE_BGRADB) return n;
    return 0;
  }
  uint64_t fingerprint() const {
    uint64_t h = 1469598103934665603ull;
    for (uint64_t v : {m, n, k, uint64_t(desc.compute), uint64_t(desc.transa), uint64_t(desc.transb),
                       uint64_t(desc.epilogue), uint64_t(a.type), uint64_t(a.ld), uint64_t(b.ld), uint64_t(d.ld)})
      h = (h ^ v) * 1099511628211ull;
    return h;
  }
};

/// Reads and checks what cublasLtMatmulAlgoGetHeuristic and cublasLtMatmul both check: live objects,
/// shapes that agree with the transposes, leading dimensions, and a configuration the emulator runs
/// (CUBLAS_STATUS_NOT_SUPPORTED for the others, as cuBLASLt answers for one it has no kernel for).
cublasStatus_t read_problem(const char* name, cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t A,
                            cublasLtMatrixLayout_t B, cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D, Problem* p) {
  if (!is_live(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!is_live(desc) || !is_live(A) || !is_live(B) || !is_live(C) || !is_live(D)) {
    tg_emu::report(std::string(name) + ": a descriptor that was never created or was destroyed");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  p->desc = *desc;
  p->a = *A;
  p->b = *B;
  p->c = *C;
  p->d = *D;
  p->m = D->rows;
  p->n = D->cols;
  const uint64_t a_rows = desc->transa == CUBLAS_OP_N ? A->rows : A->cols;
  p->k = desc->transa == CUBLAS_OP_N ? A->cols : A->rows;
  const uint64_t b_rows = desc->transb == CUBLAS_OP_N ? B->rows : B->cols;
  const uint64_t b_cols = desc->transb == CUBLAS_OP_N ? B->cols : B->rows;
  if (a_rows != p->m || b_rows != p->k || b_cols != p->n || C->rows != D->rows || C->cols != D->cols) {
    tg_emu::report(std::string(name) + ": the layouts do not make a product: op(A) " + std::to_string(a_rows) + "x" +
                   std::to_string(p->k) + ", op(B) " + std::to_string(b_rows) + "x" + std::to_string(b_cols) +
                   ", C " + std::to_string(C->rows) + "x" + std::to_string(C->cols) + ", D " +
                   std::to_string(D->rows) + "x" + std::to_string(D->cols));
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  for (const cublasLtMatrixLayoutOpaque_t* l : {A, B, C, D})
    if (l->ld < static_cast<int64_t>(l->rows > 1 ? l->rows : 1)) {
      tg_emu::report(std::string(name) + ": a leading dimension " + std::to_string(l->ld) + " below the " +
                     std::to_string(l->rows) + " rows of its (column-major) matrix");
      return CUBLAS_STATUS_INVALID_VALUE;
    }
  const cudaDataType_t t = D->type;
  // float, float16 and bfloat16 data with float32 compute and scale; double with double
  const bool float_problem = desc->compute == CUBLAS_COMPUTE_32F && desc->scale == CUDA_R_32F &&
                             (t == CUDA_R_32F || t == CUDA_R_16F || t == CUDA_R_16BF);
  const bool double_problem = desc->compute == CUBLAS_COMPUTE_64F && desc->scale == CUDA_R_64F && t == CUDA_R_64F;
  if ((!float_problem && !double_problem) || A->type != t || B->type != t || C->type != t)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (!emulated_epilogue(desc->epilogue) || desc->transc != CUBLAS_OP_N || desc->pointer_mode != 0 ||
      (desc->bias_type != -1 && desc->bias_type != t))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  return CUBLAS_STATUS_SUCCESS;
}

bool matrix_in_memory(const void* p, const cublasLtMatrixLayoutOpaque_t& l, int device) {
  if (l.rows == 0 || l.cols == 0) return true;
  const std::size_t span = (l.cols - 1) * static_cast<uint64_t>(l.ld) + l.rows;
  return tg_emu::in_device_memory(p, span * type_size(l.type), device);
}

/// D = alpha op(A) op(B) + beta C, then the epilogue, in double and rounded once to T; C is not read
/// when beta is 0. S, alpha and beta's type, is float for the 16-bit T; the bias vector is of type T.
template <class T, class S>
void run(const Problem& p, S alpha, S beta, const T* A, const T* B, const T* C, T* D, T* bias, bool shifted_bias) {
  const bool ta = p.desc.transa != CUBLAS_OP_N, tb = p.desc.transb != CUBLAS_OP_N;
  auto a_at = [&](uint64_t i, uint64_t q) { return static_cast<double>(ta ? A[q + i * p.a.ld] : A[i + q * p.a.ld]); };
  auto b_at = [&](uint64_t q, uint64_t j) { return static_cast<double>(tb ? B[j + q * p.b.ld] : B[q + j * p.b.ld]); };
  const uint64_t len = p.bias_length();
  // TG_CUDA_EMULATE_CANARY=wrong-bias-pointer: element i of the vector is read or written at i + 1
  // (wrapping around inside it), as a bias pointer one element off would.
  auto bias_at = [&](uint64_t i) -> T& { return bias[shifted_bias ? (i + 1) % len : i]; };
  const uint32_t e = p.desc.epilogue;
  for (uint64_t j = 0; j < p.n; ++j)
    for (uint64_t i = 0; i < p.m; ++i) {
      double acc = 0;
      for (uint64_t q = 0; q < p.k; ++q) acc += a_at(i, q) * b_at(q, j);
      double v = static_cast<double>(alpha) * acc;
      if (beta != S(0)) v += static_cast<double>(beta) * static_cast<double>(C[i + j * p.c.ld]);
      if (e == CUBLASLT_EPILOGUE_BIAS) v += static_cast<double>(bias_at(i));
      D[i + j * p.d.ld] = static_cast<T>(v);
    }
  if (e == CUBLASLT_EPILOGUE_BGRADA) {   // the sums of op(A)'s rows, over k
    for (uint64_t i = 0; i < p.m; ++i) {
      double s = 0;
      for (uint64_t q = 0; q < p.k; ++q) s += a_at(i, q);
      bias_at(i) = static_cast<T>(s);
    }
  } else if (e == CUBLASLT_EPILOGUE_BGRADB) {   // the sums of op(B)'s columns, over k
    for (uint64_t j = 0; j < p.n; ++j) {
      double s = 0;
      for (uint64_t q = 0; q < p.k; ++q) s += b_at(q, j);
      bias_at(j) = static_cast<T>(s);
    }
  }
}

/// cublasLt*SetAttribute's documented check, a buffer of exactly the attribute's size, then `valid`
/// on the value; *out is written only when both hold.
template <class V, class Valid>
bool read_attribute(const void* buf, std::size_t size, V* out, Valid valid) {
  if (buf == nullptr || size != sizeof(V)) return false;
  V v;
  std::memcpy(&v, buf, sizeof(V));
  if (!valid(v)) return false;
  *out = v;
  return true;
}
template <class V>
bool read_attribute(const void* buf, std::size_t size, V* out) {
  return read_attribute(buf, size, out, [](const V&) { return true; });
}

}  // namespace

cublasStatus_t cublasLtCreate(cublasLtHandle_t* lightHandle) {
  if (lightHandle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  Lock lock(tg_emu::api_mutex());
  auto* h = new cublasLtContext{tg_emu::current_device()};   // handles live for the process, like cuBLAS's
  live<cublasLtContext>().insert(h);
  *lightHandle = h;
  return CUBLAS_STATUS_SUCCESS;
}

size_t cublasLtGetVersion(void) { return CUBLAS_VER_MAJOR * 10000 + CUBLAS_VER_MINOR * 100 + CUBLAS_VER_PATCH; }

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
  if (matmulDesc == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  Lock lock(tg_emu::api_mutex());
  auto* d = new cublasLtMatmulDescOpaque_t();
  d->compute = computeType;
  d->scale = scaleType;
  live<cublasLtMatmulDescOpaque_t>().insert(d);
  *matmulDesc = d;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  Lock lock(tg_emu::api_mutex());
  if (matmulDesc == nullptr) return CUBLAS_STATUS_SUCCESS;
  if (live<cublasLtMatmulDescOpaque_t>().erase(matmulDesc) == 0) {
    tg_emu::report("cublasLtMatmulDescDestroy: a descriptor that was never created or was destroyed");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  delete matmulDesc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t sizeInBytes) {
  Lock lock(tg_emu::api_mutex());
  if (!is_live(matmulDesc)) {
    tg_emu::report("cublasLtMatmulDescSetAttribute: a descriptor that was never created or was destroyed");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  cublasLtMatmulDescOpaque_t& d = *matmulDesc;
  bool ok = false;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE: ok = read_attribute(buf, sizeInBytes, reinterpret_cast<int32_t*>(&d.compute)); break;
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE: ok = read_attribute(buf, sizeInBytes, reinterpret_cast<int32_t*>(&d.scale)); break;
    case CUBLASLT_MATMUL_DESC_POINTER_MODE: ok = read_attribute(buf, sizeInBytes, &d.pointer_mode); break;
    case CUBLASLT_MATMUL_DESC_TRANSA: ok = read_attribute(buf, sizeInBytes, &d.transa, valid_op); break;
    case CUBLASLT_MATMUL_DESC_TRANSB: ok = read_attribute(buf, sizeInBytes, &d.transb, valid_op); break;
    case CUBLASLT_MATMUL_DESC_TRANSC: ok = read_attribute(buf, sizeInBytes, &d.transc, valid_op); break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: ok = read_attribute(buf, sizeInBytes, &d.epilogue, known_epilogue); break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: ok = read_attribute(buf, sizeInBytes, &d.bias); break;
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: ok = read_attribute(buf, sizeInBytes, &d.bias_batch_stride); break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: ok = read_attribute(buf, sizeInBytes, &d.bias_type); break;
    default:
      tg_emu::report("cublasLtMatmulDescSetAttribute: attribute " + std::to_string(attr) + " is not emulated");
      return CUBLAS_STATUS_INVALID_VALUE;
  }
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  if (matLayout == nullptr || type_size(type) == 0) return CUBLAS_STATUS_INVALID_VALUE;
  Lock lock(tg_emu::api_mutex());
  auto* l = new cublasLtMatrixLayoutOpaque_t{type, rows, cols, ld};
  live<cublasLtMatrixLayoutOpaque_t>().insert(l);
  *matLayout = l;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  Lock lock(tg_emu::api_mutex());
  if (matLayout == nullptr) return CUBLAS_STATUS_SUCCESS;
  if (live<cublasLtMatrixLayoutOpaque_t>().erase(matLayout) == 0) {
    tg_emu::report("cublasLtMatrixLayoutDestroy: a layout that was never created or was destroyed");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  delete matLayout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (pref == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  Lock lock(tg_emu::api_mutex());
  auto* p = new cublasLtMatmulPreferenceOpaque_t();
  live<cublasLtMatmulPreferenceOpaque_t>().insert(p);
  *pref = p;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  Lock lock(tg_emu::api_mutex());
  if (pref == nullptr) return CUBLAS_STATUS_SUCCESS;
  if (live<cublasLtMatmulPreferenceOpaque_t>().erase(pref) == 0) {
    tg_emu::report("cublasLtMatmulPreferenceDestroy: a preference that was never created or was destroyed");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t sizeInBytes) {
  Lock lock(tg_emu::api_mutex());
  if (!is_live(pref)) {
    tg_emu::report("cublasLtMatmulPreferenceSetAttribute: a preference that was never created or was destroyed");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  bool ok = false;
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE: ok = read_attribute(buf, sizeInBytes, &pref->search_mode); break;
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: ok = read_attribute(buf, sizeInBytes, &pref->max_workspace); break;
    default:
      tg_emu::report("cublasLtMatmulPreferenceSetAttribute: attribute " + std::to_string(attr) + " is not emulated");
      return CUBLAS_STATUS_INVALID_VALUE;
  }
  return ok ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                              int* returnAlgoCount) {
  Lock lock(tg_emu::api_mutex());
  if (requestedAlgoCount <= 0 || heuristicResultsArray == nullptr || returnAlgoCount == nullptr)
    return CUBLAS_STATUS_INVALID_VALUE;
  *returnAlgoCount = 0;
  if (!is_live(preference)) {
    tg_emu::report("cublasLtMatmulAlgoGetHeuristic: a preference that was never created or was destroyed");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  Problem p;
  const cublasStatus_t st = read_problem("cublasLtMatmulAlgoGetHeuristic", lightHandle, operationDesc, Adesc, Bdesc,
                                         Cdesc, Ddesc, &p);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  cublasLtMatmulHeuristicResult_t r{};
  r.algo.data[0] = kAlgoTag;
  r.algo.data[1] = p.fingerprint();
  r.workspaceSize = 0;   // the reference matmul needs none
  r.state = CUBLAS_STATUS_SUCCESS;
  r.wavesCount = 1.0f;
  heuristicResultsArray[0] = r;
  *returnAlgoCount = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspaceSizeInBytes, cudaStream_t stream) {
  Lock lock(tg_emu::api_mutex());
  const char* name = "cublasLtMatmul";
  Problem p;
  const cublasStatus_t st = read_problem(name, lightHandle, computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  tg_emu::trace(std::string(name) + " m " + std::to_string(p.m) + " n " + std::to_string(p.n) + " k " +
                std::to_string(p.k) + " epilogue " + epilogue_name(p.desc.epilogue));
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (algo != nullptr && (algo->data[0] != kAlgoTag || algo->data[1] != p.fingerprint())) {
    tg_emu::report(std::string(name) + ": an algo that the heuristic did not return for this problem");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  // In place (C == D) needs C's layout to be D's (cuBLASLt: CUBLAS_STATUS_INVALID_VALUE otherwise).
  if (C == D && Cdesc != Ddesc && (Cdesc->ld != Ddesc->ld || Cdesc->type != Ddesc->type)) return CUBLAS_STATUS_INVALID_VALUE;
  const uint64_t len = p.bias_length();
  if (len > 0 && p.desc.bias == nullptr) {
    tg_emu::report(std::string(name) + ": epilogue " + epilogue_name(p.desc.epilogue) + " without a bias pointer");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const int device = lightHandle->device;
  if (tg_emu::current_device() != device) {
    tg_emu::report(std::string(name) + ": a handle of cuda:" + std::to_string(device) + " used while cuda:" +
                   std::to_string(tg_emu::current_device()) + " is current");
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  CUstream_st* s = tg_emu::stream_of(stream);
  if (s == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (tg_emu::device_of(s) != device) {
    tg_emu::report(std::string(name) + ": a stream of cuda:" + std::to_string(tg_emu::device_of(s)) +
                   " for a handle of cuda:" + std::to_string(device));
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (workspaceSizeInBytes > 0 && !tg_emu::in_device_memory(workspace, workspaceSizeInBytes, device)) {
    tg_emu::report(std::string(name) + ": the workspace is not device memory of cuda:" + std::to_string(device));
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  const bool double_problem = p.d.type == CUDA_R_64F;
  const std::size_t elem = type_size(p.d.type);   // the bias vector's elements have D's type
  const bool reads_c = double_problem ? *static_cast<const double*>(beta) != 0 : *static_cast<const float*>(beta) != 0;
  if (p.m == 0 || p.n == 0) return CUBLAS_STATUS_SUCCESS;
  if ((p.k > 0 && (!matrix_in_memory(A, p.a, device) || !matrix_in_memory(B, p.b, device))) ||
      (reads_c && !matrix_in_memory(C, p.c, device)) || !matrix_in_memory(D, p.d, device) ||
      (len > 0 && !tg_emu::in_device_memory(p.desc.bias, len * elem, device))) {
    tg_emu::report(std::string(name) + ": a matrix or the bias vector runs outside device memory of cuda:" +
                   std::to_string(device) + " (an illegal address on a GPU)");
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  const bool shifted = tg_emu::wrong_bias_pointer();
  // D's type picks T; alpha and beta are read at the call (host pointer mode)
  auto queue = [&](auto type_tag, auto a, auto b) {
    using T = decltype(type_tag);
    tg_emu::submit(s, [=] {
      run<T>(p, a, b, static_cast<const T*>(A), static_cast<const T*>(B), static_cast<const T*>(C), static_cast<T*>(D),
             static_cast<T*>(p.desc.bias), shifted);
    });
  };
  if (double_problem) {
    queue(double{}, *static_cast<const double*>(alpha), *static_cast<const double*>(beta));
    return CUBLAS_STATUS_SUCCESS;
  }
  const float a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
  if (p.d.type == CUDA_R_16F) queue(tg::Half{}, a, b);
  else if (p.d.type == CUDA_R_16BF) queue(tg::BFloat16{}, a, b);
  else queue(float{}, a, b);
  return CUBLAS_STATUS_SUCCESS;
}
