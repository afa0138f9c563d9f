// tests/cuda_emulator/self_test.cpp: the CUDA emulator's own checks, with kernels compiled against its
// stand-in headers and launched through TG_LAUNCH: grids, launch limits, barriers and shuffles, broken
// barriers, range-checked copies, device/stream mismatches, deferred streams, cuBLAS's argument
// validation and reference GEMM, and cuBLASLt's descriptor validation and reference matmul with its
// bias epilogues. Built only with -DTENSORGRAD_CUDA_EMULATE=ON; run in both stream
// modes by tools/cuda_emulator_check.sh. TG_CUDA_EMULATE_PLANT=out-of-bounds adds the negative control
// of its ASan stage.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tensorgrad/backend/cuda/launch.cuh"

namespace {

bool deferred() {
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  return std::strstr(p.name, "deferred") != nullptr;
}

template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  std::size_t n;
  explicit DeviceBuffer(std::size_t count) : n(count) { REQUIRE(cudaMalloc(&p, n * sizeof(T)) == cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
  std::vector<T> read() const {
    std::vector<T> v(n);
    REQUIRE(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return v;
  }
};

__global__ void write_index(int* out) {
  const unsigned i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x * blockDim.y + threadIdx.y * blockDim.x + threadIdx.x;
  out[i] = static_cast<int>(i);
}

__global__ void write_one(int* out) { out[0] = 1; }

/// Reverses each block's slice through shared memory: correct only with the barrier.
__global__ void reverse_blocks(int* data) {
  __shared__ int tile[256];
  const unsigned t = threadIdx.x, base = blockIdx.x * blockDim.x;
  tile[t] = data[base + t];
  __syncthreads();
  data[base + t] = tile[blockDim.x - 1 - t];
}

/// A barrier that only half of the block reaches.
__global__ void half_barrier(int* out) {
  if (threadIdx.x < 16) __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void shuffles(int* down, int* index) {
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  down[threadIdx.x] = __shfl_down_sync(0xffffffffu, lane * 10, 3);
  index[threadIdx.x] = __shfl_sync(0xffffffffu, lane * 10 + warp, 5);
}

__global__ void read_past_the_end(const float* in, float* out, int n) { out[0] = in[n]; }

/// out[0] = out[0] * 2 + add: replaying it shows each replay reading what the previous one wrote.
__global__ void double_and_add(int* out, int add) { out[0] = out[0] * 2 + add; }

}  // namespace

TEST_CASE("emulator: every thread of every block runs once with its indices") {
  DeviceBuffer<int> out(7 * 3 * 96 * 2);
  TG_LAUNCH(dim3(7, 3), dim3(96, 2), 0, nullptr, write_index)(out.p);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const std::vector<int> v = out.read();
  for (std::size_t i = 0; i < v.size(); ++i) CHECK(v[i] == static_cast<int>(i));
}

TEST_CASE("emulator: launch limits are those of a GPU, reported by cudaGetLastError") {
  DeviceBuffer<int> out(1);
  struct Config {
    dim3 grid, block;
    std::size_t smem;
    bool valid;
  };
  const Config configs[] = {{1, 1024, 0, true},           {1, 1025, 0, false},          {dim3(1, 65535), 1, 0, true},
                            {dim3(1, 65536), 1, 0, false}, {dim3(1, 1, 65536), 1, 0, false}, {dim3(32, 32), 1, 0, true},
                            {1, dim3(64, 32), 0, false},   {1, dim3(1, 1, 65), 0, false}, {0, 32, 0, false},
                            {1, 32, 48 * 1024, true},     {1, 32, 48 * 1024 + 1, false}};
  for (const Config& c : configs) {
    const std::string config = std::to_string(c.grid.x) + "x" + std::to_string(c.grid.y) + "x" + std::to_string(c.grid.z) +
                               " blocks of " + std::to_string(c.block.x) + "x" + std::to_string(c.block.y) + "x" +
                               std::to_string(c.block.z) + ", " + std::to_string(c.smem) + " B shared";
    CAPTURE(config);
    TG_LAUNCH(c.grid, c.block, c.smem, nullptr, write_one)(out.p);
    CHECK(cudaGetLastError() == (c.valid ? cudaSuccess : cudaErrorInvalidConfiguration));
    CHECK(cudaGetLastError() == cudaSuccess);   // not sticky
  }
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

TEST_CASE("emulator: __syncthreads orders shared memory within a block") {
  std::vector<int> host(512);
  for (int i = 0; i < 512; ++i) host[static_cast<std::size_t>(i)] = i;
  DeviceBuffer<int> data(512);
  REQUIRE(cudaMemcpy(data.p, host.data(), 512 * sizeof(int), cudaMemcpyHostToDevice) == cudaSuccess);
  TG_LAUNCH(2, 256, 0, nullptr, reverse_blocks)(data.p);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const std::vector<int> v = data.read();
  for (int i = 0; i < 512; ++i) CHECK(v[static_cast<std::size_t>(i)] == (i / 256) * 256 + 255 - i % 256);
}

TEST_CASE("emulator: a barrier that not every thread reaches fails the launch at the next synchronization") {
  DeviceBuffer<int> out(32);
  TG_LAUNCH(1, 32, 0, nullptr, half_barrier)(out.p);
  CHECK(cudaGetLastError() == cudaSuccess);   // execution errors are asynchronous
  CHECK(cudaDeviceSynchronize() == cudaErrorLaunchFailure);
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);   // reported once
}

TEST_CASE("emulator: warp shuffles exchange values among the lanes of each warp") {
  DeviceBuffer<int> down(64), index(64);
  TG_LAUNCH(1, 64, 0, nullptr, shuffles)(down.p, index.p);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const std::vector<int> d = down.read(), x = index.read();
  for (int t = 0; t < 64; ++t) {
    const int lane = t % 32;
    CHECK(d[static_cast<std::size_t>(t)] == (lane + 3 < 32 ? (lane + 3) * 10 : lane * 10));   // past the end: its own
    CHECK(x[static_cast<std::size_t>(t)] == 50 + t / 32);
  }
}

TEST_CASE("emulator: copies and memsets are checked against the allocations") {
  DeviceBuffer<char> d(100);
  std::vector<char> h(200);
  CHECK(cudaMemcpy(d.p, h.data(), 100, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(cudaMemcpy(d.p, h.data(), 101, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);   // one byte too many
  CHECK(cudaMemcpy(d.p + 50, h.data(), 51, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(h.data(), d.p, 10, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);    // the direction is wrong
  CHECK(cudaMemsetAsync(d.p, 0, 101, nullptr) == cudaErrorInvalidValue);
  CHECK(cudaMemsetAsync(h.data(), 0, 10, nullptr) == cudaErrorInvalidValue);                // not device memory
  CHECK(cudaMemset2DAsync(d.p, 10, 0, 10, 10, nullptr) == cudaSuccess);
  CHECK(cudaMemset2DAsync(d.p, 10, 0, 11, 10, nullptr) == cudaErrorInvalidValue);           // width > pitch
  CHECK(cudaMemset2DAsync(d.p, 20, 0, 10, 6, nullptr) == cudaErrorInvalidValue);            // runs past the end
  CHECK(cudaFree(d.p + 1) == cudaErrorInvalidValue);
  void* huge = nullptr;
  std::size_t free = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free, &total) == cudaSuccess);
  CHECK(cudaMalloc(&huge, total + 1) == cudaErrorMemoryAllocation);
  cudaGetLastError();
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

TEST_CASE("emulator: work on another device's stream or event is refused") {
  int count = 0;
  REQUIRE(cudaGetDeviceCount(&count) == cudaSuccess);
  if (count < 2) {
    MESSAGE("one emulated device: set TG_CUDA_EMULATE_DEVICES=2");
    return;
  }
  cudaStream_t s1 = nullptr;
  cudaEvent_t e0 = nullptr;
  REQUIRE(cudaSetDevice(1) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&e0, cudaEventDisableTiming) == cudaSuccess);
  DeviceBuffer<int> out(1);
  TG_LAUNCH(1, 1, 0, s1, write_one)(out.p);
  CHECK(cudaGetLastError() == cudaErrorInvalidResourceHandle);
  CHECK(cudaEventRecord(e0, s1) == cudaErrorInvalidResourceHandle);
  CHECK(cudaMemsetAsync(out.p, 0, sizeof(int), s1) == cudaErrorInvalidValue);   // cuda:0 memory on cuda:1's stream
  CHECK(cudaSetDevice(2 + count) == cudaErrorInvalidDevice);
  cudaGetLastError();
  CHECK(cudaEventDestroy(e0) == cudaSuccess);
  CHECK(cudaEventQuery(e0) == cudaErrorInvalidResourceHandle);   // destroyed
  cudaGetLastError();
}

TEST_CASE("emulator: deferred streams run their work only when something waits for it") {
  const bool late = deferred();
  CAPTURE(late);
  int* pinned = nullptr;
  REQUIRE(cudaHostAlloc(&pinned, 4 * sizeof(int), cudaHostAllocPortable) == cudaSuccess);
  std::vector<int> pageable{5, 6, 7, 8};
  for (int i = 0; i < 4; ++i) pinned[i] = i + 1;
  cudaStream_t s = nullptr;
  cudaEvent_t e = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess);
  DeviceBuffer<int> a(4), b(4);
  REQUIRE(cudaMemcpyAsync(a.p, pinned, 4 * sizeof(int), cudaMemcpyHostToDevice, s) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(b.p, pageable.data(), 4 * sizeof(int), cudaMemcpyHostToDevice, s) == cudaSuccess);
  REQUIRE(cudaEventRecord(e, s) == cudaSuccess);
  CHECK(cudaEventQuery(e) == (late ? cudaErrorNotReady : cudaSuccess));
  for (int i = 0; i < 4; ++i) pinned[i] = -1;                  // too early: the copy may not have read it
  for (int i = 0; i < 4; ++i) pageable[static_cast<std::size_t>(i)] = -1;   // fine: staged at the call
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(cudaEventQuery(e) == cudaSuccess);
  const std::vector<int> va = a.read(), vb = b.read();
  for (int i = 0; i < 4; ++i) {
    CHECK(va[static_cast<std::size_t>(i)] == (late ? -1 : i + 1));   // deferred mode shows the early reuse
    CHECK(vb[static_cast<std::size_t>(i)] == i + 5);
  }
  // A second stream that waits for the first's event sees its work done.
  cudaStream_t t = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaMemsetAsync(a.p, 0, 4 * sizeof(int), s) == cudaSuccess);
  REQUIRE(cudaEventRecord(e, s) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(t, e, 0) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(b.p, a.p, 4 * sizeof(int), cudaMemcpyDeviceToDevice, t) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(t) == cudaSuccess);
  for (int v : b.read()) CHECK(v == 0);
  cudaEventDestroy(e);
  CHECK(cudaFreeHost(pinned) == cudaSuccess);
}

TEST_CASE("emulator: a captured stream records its work and a graph launch replays it with the captured arguments") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  DeviceBuffer<int> x(1);
  REQUIRE(cudaMemsetAsync(x.p, 0, sizeof(int), s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  REQUIRE(cudaStreamIsCapturing(s, &status) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusActive);
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaErrorIllegalState);   // already on
  cudaGetLastError();
  TG_LAUNCH(1, 1, 0, s, double_and_add)(x.p, 1);
  TG_LAUNCH(1, 1, 0, s, double_and_add)(x.p, 3);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  REQUIRE(graph != nullptr);
  std::size_t nodes = 0;
  REQUIRE(cudaGraphGetNodes(graph, nullptr, &nodes) == cudaSuccess);
  CHECK(nodes == 2);
  CHECK(x.read()[0] == 0);   // recorded, not run
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);   // x = (0 * 2 + 1) * 2 + 3 = 5
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);   // x = (5 * 2 + 1) * 2 + 3 = 25
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(x.read()[0] == 25);
  REQUIRE(cudaStreamIsCapturing(s, &status) == cudaSuccess);
  CHECK(status == cudaStreamCaptureStatusNone);
  CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
  CHECK(cudaGraphDestroy(graph) == cudaSuccess);
}

TEST_CASE("emulator: what a capture cannot hold is refused with the runtime's errors and invalidates it") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  DeviceBuffer<int> x(4);
  int host[4] = {0, 0, 0, 0};
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal) == cudaErrorStreamCaptureUnsupported);
  cudaGetLastError();

  SUBCASE("synchronizing the capturing stream") {
    REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);
  }
  SUBCASE("cudaMalloc, unless the thread relaxed its mode") {
    REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    void* p = nullptr;
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    REQUIRE(cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess);
    CHECK(mode == cudaStreamCaptureModeGlobal);
    CHECK(cudaMalloc(&p, 64) == cudaSuccess);   // relaxed: allowed, the capture stays valid
    REQUIRE(cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    REQUIRE(cudaStreamIsCapturing(s, &status) == cudaSuccess);
    CHECK(status == cudaStreamCaptureStatusActive);
    void* q = nullptr;
    CHECK(cudaMalloc(&q, 64) == cudaErrorStreamCaptureUnsupported);
    REQUIRE(cudaStreamIsCapturing(s, &status) == cudaSuccess);
    CHECK(status == cudaStreamCaptureStatusInvalidated);
    cudaGetLastError();
    CHECK(cudaStreamEndCapture(s, &graph) == cudaErrorStreamCaptureInvalidated);
    CHECK(graph == nullptr);
    CHECK(cudaFree(p) == cudaSuccess);   // after the capture: allowed again
    return;
  }
  SUBCASE("a copy into pageable host memory") {
    REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    CHECK(cudaMemcpyAsync(host, x.p, sizeof host, cudaMemcpyDeviceToHost, s) == cudaErrorStreamCaptureUnsupported);
  }
  SUBCASE("querying an event recorded in the capture") {
    cudaEvent_t e = nullptr;
    REQUIRE(cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess);
    REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    REQUIRE(cudaEventRecord(e, s) == cudaSuccess);
    CHECK(cudaEventQuery(e) == cudaErrorCapturedEvent);
    CHECK(cudaStreamWaitEvent(s, e, 0) == cudaSuccess);   // within the capture: only ordering
    CHECK(cudaStreamWaitEvent(nullptr, e, 0) == cudaErrorStreamCaptureIsolation);
    TG_LAUNCH(1, 1, 0, s, write_one)(x.p);
    cudaGetLastError();
    REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);   // events do not invalidate it
    CHECK(cudaEventQuery(e) == cudaSuccess);   // the capture is over
    cudaEventDestroy(e);
    cudaGraphDestroy(graph);
    return;
  }
  cudaGetLastError();
  CHECK(cudaStreamEndCapture(s, &graph) == cudaErrorStreamCaptureInvalidated);
  CHECK(graph == nullptr);
  cudaGetLastError();
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);   // an ordinary stream again
}

TEST_CASE("emulator cuBLAS: arguments are validated as cuBLAS documents") {
  cublasHandle_t h = nullptr;
  REQUIRE(cublasCreate_v2(&h) == CUBLAS_STATUS_SUCCESS);
  DeviceBuffer<float> A(6), B(6), C(4);
  const float one = 1, zero = 0;
  const auto N = CUBLAS_OP_N, T = CUBLAS_OP_T;
  // C (2x2) = A (2x3) B (3x2), column-major.
  CHECK(cublasSgemm_v2(h, N, N, 2, 2, 3, &one, A.p, 2, B.p, 3, &zero, C.p, 2) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasSgemm_v2(h, N, N, 2, 2, 3, &one, A.p, 1, B.p, 3, &zero, C.p, 2) == CUBLAS_STATUS_INVALID_VALUE);   // lda < m
  CHECK(cublasSgemm_v2(h, T, N, 2, 2, 3, &one, A.p, 2, B.p, 3, &zero, C.p, 2) == CUBLAS_STATUS_INVALID_VALUE);   // lda < k
  CHECK(cublasSgemm_v2(h, N, N, 2, 2, 3, &one, A.p, 2, B.p, 2, &zero, C.p, 2) == CUBLAS_STATUS_INVALID_VALUE);   // ldb < k
  CHECK(cublasSgemm_v2(h, N, N, 2, 2, 3, &one, A.p, 2, B.p, 3, &zero, C.p, 1) == CUBLAS_STATUS_INVALID_VALUE);   // ldc < m
  CHECK(cublasSgemm_v2(h, N, N, -1, 2, 3, &one, A.p, 2, B.p, 3, &zero, C.p, 2) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSgemm_v2(h, static_cast<cublasOperation_t>(3), N, 2, 2, 3, &one, A.p, 2, B.p, 3, &zero, C.p, 2) ==
        CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSgemm_v2(h, N, N, 2, 2, 3, nullptr, A.p, 2, B.p, 3, &zero, C.p, 2) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSgemm_v2(nullptr, N, N, 2, 2, 3, &one, A.p, 2, B.p, 3, &zero, C.p, 2) == CUBLAS_STATUS_NOT_INITIALIZED);
  CHECK(cublasSgemm_v2(h, N, N, 2, 2, 4, &one, A.p, 2, B.p, 4, &zero, C.p, 2) == CUBLAS_STATUS_EXECUTION_FAILED);   // A is 2x3
  CHECK(cublasSgemmStridedBatched(h, N, N, 2, 2, 3, &one, A.p, 2, 0, B.p, 3, 0, &zero, C.p, 2, 0, -1) ==
        CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasSgemmStridedBatched(h, N, N, 2, 1, 3, &one, A.p, 2, 0, B.p, 3, 0, &zero, C.p, 2, 1, 2) ==
        CUBLAS_STATUS_INVALID_VALUE);   // the two C matrices overlap
  CHECK(cublasSgemmStridedBatched(h, N, N, 2, 1, 3, &one, A.p, 2, 0, B.p, 3, 0, &zero, C.p, 2, 2, 2) ==
        CUBLAS_STATUS_SUCCESS);
  std::vector<char> host(64);
  CHECK(cublasSetWorkspace_v2(h, host.data(), 64) != CUBLAS_STATUS_SUCCESS);   // not device memory
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

TEST_CASE("emulator cuBLAS: the reference GEMM computes alpha op(A) op(B) + beta C") {
  cublasHandle_t h = nullptr;
  REQUIRE(cublasCreate_v2(&h) == CUBLAS_STATUS_SUCCESS);
  const std::vector<double> a{1, 2, 3, 4, 5, 6};   // column-major 2x3: [[1 3 5] [2 4 6]]
  const std::vector<double> b{1, 0, 2, 1, 1, 0};   // column-major 3x2: [[1 1] [0 1] [2 0]]
  DeviceBuffer<double> A(6), B(6), C(4);
  REQUIRE(cudaMemcpy(A.p, a.data(), 48, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(B.p, b.data(), 48, cudaMemcpyHostToDevice) == cudaSuccess);
  const double nan = std::nan(""), two = 2, zero = 0, one = 1;
  const std::vector<double> c0{nan, nan, nan, nan};
  REQUIRE(cudaMemcpy(C.p, c0.data(), 32, cudaMemcpyHostToDevice) == cudaSuccess);
  // beta = 0: C is not read, so its NaNs do not propagate. A B = [[11 4] [14 6]].
  REQUIRE(cublasDgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &two, A.p, 2, B.p, 3, &zero, C.p, 2) == CUBLAS_STATUS_SUCCESS);
  CHECK(C.read() == std::vector<double>{22, 28, 8, 12});
  // C += B^T A^T = (A B)^T = [[11 14] [4 6]].
  REQUIRE(cublasDgemm_v2(h, CUBLAS_OP_T, CUBLAS_OP_T, 2, 2, 3, &one, B.p, 3, A.p, 2, &one, C.p, 2) == CUBLAS_STATUS_SUCCESS);
  CHECK(C.read() == std::vector<double>{33, 32, 22, 18});
}

namespace {
/// One cuBLASLt problem's descriptors, destroyed at the end of a case.
struct LtProblem {
  cublasLtHandle_t h = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  /// D (m x n) = op(A) op(B), float or double, column-major, op(A) = A^T when trans_a.
  LtProblem(cudaDataType_t type, int m, int n, int k, bool trans_a) {
    REQUIRE(cublasLtCreate(&h) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatmulDescCreate(&desc, type == CUDA_R_64F ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, type) ==
            CUBLAS_STATUS_SUCCESS);
    const int32_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    REQUIRE(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatrixLayoutCreate(&a, type, trans_a ? k : m, trans_a ? m : k, trans_a ? k : m) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatrixLayoutCreate(&b, type, k, n, k) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatrixLayoutCreate(&c, type, m, n, m) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
  }
  ~LtProblem() {
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(c);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatmulDescDestroy(desc);
  }
  void epilogue(cublasLtEpilogue_t e, void* vector) {
    const uint32_t v = e;
    REQUIRE(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &v, sizeof(v)) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vector, sizeof(vector)) ==
            CUBLAS_STATUS_SUCCESS);
  }
  cublasStatus_t heuristic(cublasLtMatmulHeuristicResult_t* r, int* found) {
    return cublasLtMatmulAlgoGetHeuristic(h, desc, a, b, c, c, pref, 1, r, found);
  }
};
}  // namespace

TEST_CASE("emulator cuBLASLt: descriptors and attributes are validated as cuBLASLt documents") {
  DeviceBuffer<float> A(6), B(6), D(4), bias(2);
  const float one = 1, zero = 0;
  LtProblem p(CUDA_R_32F, 2, 2, 3, false);   // D (2x2) = A (2x3) B (3x2)
  // An attribute's buffer must have the attribute's size; values must be valid.
  const int64_t wide = CUBLAS_OP_T;
  CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &wide, sizeof(wide)) == CUBLAS_STATUS_INVALID_VALUE);
  const int32_t bad_op = 3;
  CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &bad_op, sizeof(bad_op)) == CUBLAS_STATUS_INVALID_VALUE);
  const uint32_t bad_epilogue = 3;
  CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &bad_epilogue, 4) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, nullptr, sizeof(void*)) ==
        CUBLAS_STATUS_INVALID_VALUE);
  const uint32_t small = 64;
  CHECK(cublasLtMatmulPreferenceSetAttribute(p.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &small, sizeof(small)) ==
        CUBLAS_STATUS_INVALID_VALUE);   // uint64_t
  cublasLtMatmulHeuristicResult_t r{};
  int found = 0;
  REQUIRE(p.heuristic(&r, &found) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(found == 1);
  CHECK(cublasLtMatmul(p.h, p.desc, &one, A.p, p.a, B.p, p.b, &zero, D.p, p.c, D.p, p.c, &r.algo, nullptr, 0, nullptr) ==
        CUBLAS_STATUS_SUCCESS);
  // The layouts must make a product: A as (3x2) with op N does not multiply B (3x2).
  cublasLtMatrixLayout_t wrong = nullptr;
  REQUIRE(cublasLtMatrixLayoutCreate(&wrong, CUDA_R_32F, 3, 2, 3) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmul(p.h, p.desc, &one, A.p, wrong, B.p, p.b, &zero, D.p, p.c, D.p, p.c, nullptr, nullptr, 0, nullptr) ==
        CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatrixLayoutDestroy(wrong);
  // A destroyed layout is reported, not read.
  CHECK(cublasLtMatmul(p.h, p.desc, &one, A.p, wrong, B.p, p.b, &zero, D.p, p.c, D.p, p.c, nullptr, nullptr, 0, nullptr) ==
        CUBLAS_STATUS_INVALID_VALUE);
  // A leading dimension below the rows.
  cublasLtMatrixLayout_t short_ld = nullptr;
  REQUIRE(cublasLtMatrixLayoutCreate(&short_ld, CUDA_R_32F, 2, 3, 1) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmul(p.h, p.desc, &one, A.p, short_ld, B.p, p.b, &zero, D.p, p.c, D.p, p.c, nullptr, nullptr, 0,
                       nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatrixLayoutDestroy(short_ld);
  // An algo for another problem.
  cublasLtMatmulHeuristicResult_t other = r;
  other.algo.data[1] ^= 1;
  CHECK(cublasLtMatmul(p.h, p.desc, &one, A.p, p.a, B.p, p.b, &zero, D.p, p.c, D.p, p.c, &other.algo, nullptr, 0,
                       nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  // Mixed types and an epilogue the emulator has no kernel for: NOT_SUPPORTED, as cuBLASLt answers.
  cublasLtMatrixLayout_t dbl = nullptr;
  REQUIRE(cublasLtMatrixLayoutCreate(&dbl, CUDA_R_64F, 2, 3, 2) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmulAlgoGetHeuristic(p.h, p.desc, dbl, p.b, p.c, p.c, p.pref, 1, &r, &found) == CUBLAS_STATUS_NOT_SUPPORTED);
  cublasLtMatrixLayoutDestroy(dbl);
  const uint32_t relu = CUBLASLT_EPILOGUE_RELU;
  REQUIRE(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &relu, sizeof(relu)) == CUBLAS_STATUS_SUCCESS);
  CHECK(p.heuristic(&r, &found) == CUBLAS_STATUS_NOT_SUPPORTED);
  // The bias epilogue needs a bias pointer, in device memory, long enough for D's rows.
  p.epilogue(CUBLASLT_EPILOGUE_BIAS, nullptr);
  REQUIRE(p.heuristic(&r, &found) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmul(p.h, p.desc, &one, A.p, p.a, B.p, p.b, &zero, D.p, p.c, D.p, p.c, &r.algo, nullptr, 0, nullptr) ==
        CUBLAS_STATUS_INVALID_VALUE);
  std::vector<float> host_bias(2);
  p.epilogue(CUBLASLT_EPILOGUE_BIAS, host_bias.data());
  CHECK(cublasLtMatmul(p.h, p.desc, &one, A.p, p.a, B.p, p.b, &zero, D.p, p.c, D.p, p.c, &r.algo, nullptr, 0, nullptr) ==
        CUBLAS_STATUS_EXECUTION_FAILED);
  p.epilogue(CUBLASLT_EPILOGUE_BIAS, bias.p + 1);   // one element short
  CHECK(cublasLtMatmul(p.h, p.desc, &one, A.p, p.a, B.p, p.b, &zero, D.p, p.c, D.p, p.c, &r.algo, nullptr, 0, nullptr) ==
        CUBLAS_STATUS_EXECUTION_FAILED);
  p.epilogue(CUBLASLT_EPILOGUE_BIAS, bias.p);
  CHECK(cublasLtMatmul(p.h, p.desc, &one, A.p, p.a, B.p, p.b, &zero, D.p, p.c, D.p, p.c, &r.algo, nullptr, 0, nullptr) ==
        CUBLAS_STATUS_SUCCESS);
  // A workspace must be device memory.
  std::vector<char> host(64);
  CHECK(cublasLtMatmul(p.h, p.desc, &one, A.p, p.a, B.p, p.b, &zero, D.p, p.c, D.p, p.c, &r.algo, host.data(), 64,
                       nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

TEST_CASE("emulator cuBLASLt: the reference matmul adds the bias and writes the bias gradients") {
  const std::vector<double> a{1, 2, 3, 4, 5, 6};   // column-major 2x3: [[1 3 5] [2 4 6]]
  const std::vector<double> b{1, 0, 2, 1, 1, 0};   // column-major 3x2: [[1 1] [0 1] [2 0]]
  DeviceBuffer<double> A(6), B(6), D(4), v(2);
  REQUIRE(cudaMemcpy(A.p, a.data(), 48, cudaMemcpyHostToDevice) == cudaSuccess);
  REQUIRE(cudaMemcpy(B.p, b.data(), 48, cudaMemcpyHostToDevice) == cudaSuccess);
  const std::vector<double> bias{10, 20};
  REQUIRE(cudaMemcpy(v.p, bias.data(), 16, cudaMemcpyHostToDevice) == cudaSuccess);
  const double one = 1, zero = 0;
  LtProblem p(CUDA_R_64F, 2, 2, 3, false);
  cublasLtMatmulHeuristicResult_t r{};
  int found = 0;
  auto matmul = [&] {
    REQUIRE(p.heuristic(&r, &found) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatmul(p.h, p.desc, &one, A.p, p.a, B.p, p.b, &zero, D.p, p.c, D.p, p.c, &r.algo, nullptr, 0,
                           nullptr) == CUBLAS_STATUS_SUCCESS);
  };
  // A B = [[11 4] [14 6]]; BIAS adds bias[i] to row i.
  p.epilogue(CUBLASLT_EPILOGUE_BIAS, v.p);
  matmul();
  CHECK(D.read() == std::vector<double>{21, 34, 14, 26});
  CHECK(v.read() == bias);   // read only
  // BGRADA: the sums of A's rows over k, [9 12]; BGRADB: the sums of B's columns over k, [3 2].
  p.epilogue(CUBLASLT_EPILOGUE_BGRADA, v.p);
  matmul();
  CHECK(D.read() == std::vector<double>{11, 14, 4, 6});
  CHECK(v.read() == std::vector<double>{9, 12});
  p.epilogue(CUBLASLT_EPILOGUE_BGRADB, v.p);
  matmul();
  CHECK(v.read() == std::vector<double>{3, 2});
  // With A stored transposed (3x2, op T) the sums are of op(A): the same [9 12].
  const std::vector<double> at{1, 3, 5, 2, 4, 6};
  REQUIRE(cudaMemcpy(A.p, at.data(), 48, cudaMemcpyHostToDevice) == cudaSuccess);
  LtProblem q(CUDA_R_64F, 2, 2, 3, true);
  q.epilogue(CUBLASLT_EPILOGUE_BGRADA, v.p);
  REQUIRE(q.heuristic(&r, &found) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(cublasLtMatmul(q.h, q.desc, &one, A.p, q.a, B.p, q.b, &zero, D.p, q.c, D.p, q.c, &r.algo, nullptr, 0,
                         nullptr) == CUBLAS_STATUS_SUCCESS);
  CHECK(D.read() == std::vector<double>{11, 14, 4, 6});
  CHECK(v.read() == std::vector<double>{9, 12});
}

TEST_CASE("emulator: planted out-of-bounds read of device memory (TG_CUDA_EMULATE_PLANT=out-of-bounds)") {
  const char* plant = std::getenv("TG_CUDA_EMULATE_PLANT");
  if (plant == nullptr || std::string(plant) != "out-of-bounds") {
    MESSAGE("not planted");
    return;
  }
  DeviceBuffer<float> in(33), out(1);
  TG_LAUNCH(1, 1, 0, nullptr, read_past_the_end)(in.p, out.p, 33);   // ASan reports a heap-buffer-overflow
  cudaDeviceSynchronize();
}
