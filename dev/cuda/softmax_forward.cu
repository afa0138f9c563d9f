// dev/cuda/softmax_forward.cu: a ladder of softmax kernels over the rows of a (rows, cols) float
// matrix, from one thread per row up to warp shuffles with 16-byte loads and a one-pass (online)
// reduction. Every kernel, at every block size, is checked against a CPU reference and timed; rows
// of odd length reach every tail. dev/cuda/README.md says how to build and run it on a GPU and on
// the CUDA emulator. Exit status 1 when any kernel disagrees with the reference.
//   cuda_ladder_softmax [--small] [--kernel K] [--reps N]
#include "common.h"

// softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m), with m = max_j x_j. Subtracting the max changes
// nothing mathematically and keeps every exponent <= 0, so exp never overflows. Each kernel therefore
// needs two reductions over its row (the max, then the sum of exponentials) and one write.

constexpr int kMaxBlock = 1024;   // the largest block a GPU runs

// ---- the CPU reference, in double

std::vector<double> softmax_reference(const std::vector<float>& in, int rows, int cols) {
  std::vector<double> out(in.size());
  for (int r = 0; r < rows; ++r) {
    const float* x = in.data() + static_cast<std::size_t>(r) * cols;
    double* y = out.data() + static_cast<std::size_t>(r) * cols;
    double m = -INFINITY, sum = 0;
    for (int c = 0; c < cols; ++c) m = std::max(m, static_cast<double>(x[c]));
    for (int c = 0; c < cols; ++c) sum += y[c] = std::exp(static_cast<double>(x[c]) - m);
    for (int c = 0; c < cols; ++c) y[c] /= sum;
  }
  return out;
}

// ---- kernel 1: one thread per row

// Each thread walks its whole row three times. Simple, and slow twice over: a matrix of 4096 rows
// keeps only 4096 threads busy (a GPU wants hundreds of thousands in flight), and the 32 threads of a
// warp read addresses `cols` floats apart, so each load of a warp costs 32 memory transactions where
// adjacent addresses would cost one or two (the loads are not coalesced).
__global__ void softmax_kernel1(float* out, const float* in, int rows, int cols) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float* x = in + static_cast<std::size_t>(row) * cols;
  float* y = out + static_cast<std::size_t>(row) * cols;
  float m = -INFINITY;
  for (int c = 0; c < cols; ++c) m = fmaxf(m, x[c]);
  float sum = 0.f;
  for (int c = 0; c < cols; ++c) {
    y[c] = expf(x[c] - m);
    sum += y[c];
  }
  const float inv = 1.f / sum;
  for (int c = 0; c < cols; ++c) y[c] *= inv;
}

// ---- kernel 2: one block per row, reductions through shared memory

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

// Reduces v over the block through `partial` (one slot per thread, in shared memory), halving the
// number of active threads each step: log2(blockDim.x) steps, blockDim.x a power of two. Every thread
// gets the result.
template <class Op>
__device__ float block_reduce_shared(float v, float* partial, Op op) {
  const int t = threadIdx.x;
  partial[t] = v;
  __syncthreads();   // every slot is written before any is read
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] = op(partial[t], partial[t + stride]);
    __syncthreads();   // this step's results are written before the next step reads them
  }
  const float result = partial[0];
  __syncthreads();   // every thread has read partial[0] before a next reduction overwrites it
  return result;
}

// Thread t takes columns t, t + blockDim.x, ...: at each step the block reads consecutive floats
// (coalesced), and a row of 4096 is spread over up to 1024 threads. The exponentials are stored in
// the first pass and scaled in place, so x is read twice and y written twice and read once.
__global__ void softmax_kernel2(float* out, const float* in, int rows, int cols) {
  __shared__ float partial[kMaxBlock];
  const int row = blockIdx.x;
  if (row >= rows) return;   // the whole block leaves together: no barrier waits for a missing thread
  const float* x = in + static_cast<std::size_t>(row) * cols;
  float* y = out + static_cast<std::size_t>(row) * cols;
  float m = -INFINITY;   // a thread with no column (cols < blockDim.x) brings the identity of max
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, x[c]);
  m = block_reduce_shared(m, partial, MaxOp());
  float sum = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float e = expf(x[c] - m);
    y[c] = e;
    sum += e;
  }
  sum = block_reduce_shared(sum, partial, SumOp());
  const float inv = 1.f / sum;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[c] *= inv;
}

// ---- kernel 3: one warp per row, reductions by warp shuffles

// The 32 lanes of a warp exchange registers directly (__shfl_down_sync: lane i reads lane i + offset),
// with no shared memory and no barrier. Five halving steps leave the result in lane 0, which
// __shfl_sync then hands to every lane. (A butterfly of __shfl_xor_sync gives every lane the result
// in the same five steps; down-then-broadcast also runs on the CUDA emulator, which has no xor shuffle.)
__device__ float warp_max(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v = fmaxf(v, __shfl_down_sync(kFullMask, v, offset));
  return __shfl_sync(kFullMask, v, 0);
}
__device__ float warp_sum(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) v += __shfl_down_sync(kFullMask, v, offset);
  return __shfl_sync(kFullMask, v, 0);
}

// A block of blockDim.x / 32 warps takes as many rows. No exponential is stored: the last pass
// computes it again, so y is only written, once (x is read three times, mostly from the cache: a row
// is at most a few KB).
__global__ void softmax_kernel3(float* out, const float* in, int rows, int cols) {
  const int row = blockIdx.x * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= rows) return;   // the whole warp leaves together: no shuffle waits for a missing lane
  const float* x = in + static_cast<std::size_t>(row) * cols;
  float* y = out + static_cast<std::size_t>(row) * cols;
  float m = -INFINITY;
  for (int c = lane; c < cols; c += kWarpSize) m = fmaxf(m, x[c]);
  m = warp_max(m);
  float sum = 0.f;
  for (int c = lane; c < cols; c += kWarpSize) sum += expf(x[c] - m);
  const float inv = 1.f / warp_sum(sum);
  for (int c = lane; c < cols; c += kWarpSize) y[c] = expf(x[c] - m) * inv;
}

// ---- kernel 4: kernel 3 with 16-byte loads and stores (float4)

// A float4 load moves 16 bytes in one instruction, four times fewer than float loads for the same
// row, but only from a 16-byte aligned address. Row r starts r * cols floats into the buffer, so with
// cols = 257 only every fourth row starts aligned. A row is therefore split into a head (the floats
// before its first 16-byte boundary, 0 to 3 of them), a body of whole float4s, and a tail (0 to 3
// floats). Input and output come from cudaMalloc (256-byte aligned) with the same row length, so
// their rows share one split.
struct RowSplit {
  int head, nvec, tail;   // body: float4s [0, nvec) from float `head` on; tail: floats [tail, cols)
  __device__ RowSplit(const float* row, int cols) {
    const int past_boundary = static_cast<int>((reinterpret_cast<uintptr_t>(row) / sizeof(float)) % 4);
    head = (4 - past_boundary) % 4;
    if (head > cols) head = cols;
    nvec = (cols - head) / 4;
    tail = head + 4 * nvec;
  }
};

__device__ float max4(float4 q) { return fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w)); }

__global__ void softmax_kernel4(float* out, const float* in, int rows, int cols) {
  const int row = blockIdx.x * (blockDim.x / kWarpSize) + threadIdx.x / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (row >= rows) return;
  const float* x = in + static_cast<std::size_t>(row) * cols;
  float* y = out + static_cast<std::size_t>(row) * cols;
  const RowSplit s(x, cols);
  const float4* xv = reinterpret_cast<const float4*>(x + s.head);
  float4* yv = reinterpret_cast<float4*>(y + s.head);
  // Lane i takes float4 i, i + 32, ...: a warp reads 512 consecutive bytes per step. The head and
  // tail (under 4 floats each) go to the first lanes.
  float m = -INFINITY;
  if (lane < s.head) m = x[lane];
  for (int v = lane; v < s.nvec; v += kWarpSize) m = fmaxf(m, max4(xv[v]));
  if (s.tail + lane < cols) m = fmaxf(m, x[s.tail + lane]);
  m = warp_max(m);
  float sum = 0.f;
  if (lane < s.head) sum += expf(x[lane] - m);
  for (int v = lane; v < s.nvec; v += kWarpSize) {
    const float4 q = xv[v];
    sum += (expf(q.x - m) + expf(q.y - m)) + (expf(q.z - m) + expf(q.w - m));
  }
  if (s.tail + lane < cols) sum += expf(x[s.tail + lane] - m);
  const float inv = 1.f / warp_sum(sum);
  if (lane < s.head) y[lane] = expf(x[lane] - m) * inv;
  for (int v = lane; v < s.nvec; v += kWarpSize) {
    const float4 q = xv[v];
    float4 r;
    r.x = expf(q.x - m) * inv;
    r.y = expf(q.y - m) * inv;
    r.z = expf(q.z - m) * inv;
    r.w = expf(q.w - m) * inv;
    yv[v] = r;
  }
  if (s.tail + lane < cols) y[s.tail + lane] = expf(x[s.tail + lane] - m) * inv;
}

// ---- kernel 5: online softmax, one block per row

// The max and the sum in one pass (Milakov and Gimelshein, "Online normalizer calculation for
// softmax", 2018). Keep (m, s): the max so far and the sum of exp(x - m) so far. A larger x rescales
// the sum to the new max: s * exp(m_old - m_new). Two partial (m, s) combine the same way, so threads,
// then warps, then the block merge their partials without reading x again: x is read twice (once
// for (m, s), once to write y), against three times in kernel 3.
struct MaxSum {
  float m, s;
};

__device__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.m, b.m);
  if (m == -INFINITY) return {m, 0.f};   // both empty: exp(-inf - -inf) would be NaN
  return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

// Five shuffle steps leave the warp's (m, s) in lane 0.
__device__ MaxSum warp_combine(MaxSum v) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    const MaxSum other = {__shfl_down_sync(kFullMask, v.m, offset), __shfl_down_sync(kFullMask, v.s, offset)};
    v = combine(v, other);
  }
  return v;
}

__global__ void softmax_kernel5(float* out, const float* in, int rows, int cols) {
  __shared__ float warp_m[kMaxBlock / kWarpSize], warp_s[kMaxBlock / kWarpSize];
  const int row = blockIdx.x;
  if (row >= rows) return;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize, warps = blockDim.x / kWarpSize;
  const float* x = in + static_cast<std::size_t>(row) * cols;
  float* y = out + static_cast<std::size_t>(row) * cols;
  MaxSum acc = {-INFINITY, 0.f};   // the empty set; a thread with no column keeps it
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = x[c];
    if (v > acc.m) {   // a new max: rescale the sum to it (0 * exp(-inf) = 0 the first time)
      acc.s = acc.s * expf(acc.m - v) + 1.f;
      acc.m = v;
    } else {
      acc.s += expf(v - acc.m);
    }
  }
  acc = warp_combine(acc);
  if (lane == 0) {
    warp_m[warp] = acc.m;
    warp_s[warp] = acc.s;
  }
  __syncthreads();   // every warp's partial is in shared memory
  // Every warp merges the warps' partials itself: no second barrier to hand out one warp's result.
  MaxSum total = lane < warps ? MaxSum{warp_m[lane], warp_s[lane]} : MaxSum{-INFINITY, 0.f};
  total = warp_combine(total);
  const float m = __shfl_sync(kFullMask, total.m, 0);
  const float inv = 1.f / __shfl_sync(kFullMask, total.s, 0);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) y[c] = expf(x[c] - m) * inv;
}

// ---- the ladder

struct Kernel {
  int id;
  const char* name;
  void (*run)(float* out, const float* in, int rows, int cols, int block);
};

const Kernel kKernels[] = {
    {1, "1 naive: one thread per row",
     [](float* out, const float* in, int rows, int cols, int block) {
       LAUNCH(ceil_div(rows, block), block, softmax_kernel1)(out, in, rows, cols);
     }},
    {2, "2 one block per row, shared-memory tree",
     [](float* out, const float* in, int rows, int cols, int block) {
       LAUNCH(rows, block, softmax_kernel2)(out, in, rows, cols);
     }},
    {3, "3 one warp per row, warp shuffles",
     [](float* out, const float* in, int rows, int cols, int block) {
       LAUNCH(ceil_div(rows, block / kWarpSize), block, softmax_kernel3)(out, in, rows, cols);
     }},
    {4, "4 one warp per row, shuffles + float4",
     [](float* out, const float* in, int rows, int cols, int block) {
       LAUNCH(ceil_div(rows, block / kWarpSize), block, softmax_kernel4)(out, in, rows, cols);
     }},
    {5, "5 online softmax, one block per row",
     [](float* out, const float* in, int rows, int cols, int block) {
       LAUNCH(rows, block, softmax_kernel5)(out, in, rows, cols);
     }},
};

// Powers of two, whole warps: what kernels 2 to 5 need (kernel 1 takes any size).
const int kBlockSizes[] = {32, 64, 128, 256, 512, 1024};

struct Shape {
  int rows, cols;
};

int usage(const char* error) {
  if (error != nullptr) std::fprintf(stderr, "cuda_ladder_softmax: %s\n", error);
  std::fprintf(error ? stderr : stdout,
               "usage: cuda_ladder_softmax [--small] [--kernel K] [--reps N]\n"
               "  --small     small matrices (the default on the CUDA emulator)\n"
               "  --kernel K  only kernel K (1 to 5)\n"
               "  --reps N    timed repetitions per kernel and block size, median reported (default 20;\n"
               "              1 on the emulator)\n");
  return error ? 2 : 0;
}

int main(int argc, char** argv) {
  bool small = kOnEmulator;
  int only = 0, reps = kOnEmulator ? 1 : 20;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--small") {
      small = true;
    } else if ((arg == "--kernel" || arg == "--reps") && i + 1 < argc) {
      const int v = std::atoi(argv[++i]);
      if (arg == "--kernel" && (v < 1 || v > 5)) return usage("--kernel expects 1 to 5");
      if (arg == "--reps" && v < 1) return usage("--reps expects a positive count");
      (arg == "--kernel" ? only : reps) = v;
    } else if (arg == "-h" || arg == "--help") {
      return usage(nullptr);
    } else {
      return usage(("unknown argument '" + arg + "'").c_str());
    }
  }
  require_device();
  // Rows of 257 floats: every row but every fourth starts off a 16-byte boundary, and 257 is neither a
  // multiple of the warp nor of any block, so heads and tails are reached. Rows of 4096: long rows,
  // where a block per row pays off. Rows of 5: shorter than a warp and barely longer than a float4.
  const std::vector<Shape> shapes = small ? std::vector<Shape>{{37, 257}, {3, 4096}, {19, 5}}
                                          : std::vector<Shape>{{4096, 257}, {1024, 4096}, {2048, 5}};
  std::printf("softmax forward ladder on %s%s\n", device_name(),
              kOnEmulator ? "; the times are host time of the emulated threads, meaningless for a GPU" : "");
  const CacheFlusher flusher;
  int runs = 0, failures = 0;
  for (const Shape& shape : shapes) {
    const std::size_t n = static_cast<std::size_t>(shape.rows) * shape.cols;
    const std::vector<float> input = uniform_floats(n, -4.f, 4.f, static_cast<uint64_t>(shape.rows) * 131 + shape.cols);
    const std::vector<double> want = softmax_reference(input, shape.rows, shape.cols);
    DeviceArray<float> in(n), out(n);
    in.upload(input);
    const double tol = row_tolerance(shape.cols);
    const double bytes = 2.0 * static_cast<double>(n) * sizeof(float);   // read x once, write y once
    char title[160];
    std::snprintf(title, sizeof title, "softmax over the rows of a (%d, %d) float matrix, median of %d run%s:",
                  shape.rows, shape.cols, reps, reps == 1 ? "" : "s");
    print_table_header(title);
    double best_ms = INFINITY;
    int best_kernel = 0, best_block = 0;
    for (const Kernel& k : kKernels) {
      if (only != 0 && k.id != only) continue;
      for (int block : kBlockSizes) {
        out.poison();
        k.run(out.ptr, in.ptr, shape.rows, shape.cols, block);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaDeviceSynchronize());
        const CheckResult check = check_output(out.download(), want, shape.cols, tol);
        const double ms = median_ms([&] { k.run(out.ptr, in.ptr, shape.rows, shape.cols, block); }, reps, flusher);
        print_table_row(k.name, block, ms, bytes, check, tol);
        ++runs;
        if (!check.ok) ++failures;
        if (check.ok && ms < best_ms) {
          best_ms = ms;
          best_kernel = k.id;
          best_block = block;
        }
      }
    }
    if (best_kernel != 0 && !kOnEmulator)
      std::printf("  fastest on (%d, %d): kernel %d at block %d, %.4f ms, %.1f GB/s\n", shape.rows, shape.cols,
                  best_kernel, best_block, best_ms, bytes / (best_ms * 1e6));
  }
  if (failures == 0) {
    std::printf("\nall %d kernel runs match the CPU reference\n", runs);
    return 0;
  }
  std::printf("\nFAILED: %d of %d kernel runs disagree with the CPU reference\n", failures, runs);
  return 1;
}
