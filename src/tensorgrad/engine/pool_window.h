/// \file
/// engine/pool_window.h: where each pooling window lies in its input plane, shared by the CPU loops
/// (engine/cpu_conv.cpp) and the CUDA kernels (cuda/conv.cu) so both backends pool the same elements.
#pragma once
#include <cstdint>

#include "tensorgrad/engine/backend.h"
#include "tensorgrad/engine/macros.h"

namespace tg {

/// One window of a pooling along one axis: the input rows [begin, end) it reads (clipped to the input)
/// and the count its average divides by.
struct PoolSpan {
  int64_t begin = 0;   ///< first input row (column) read
  int64_t end = 0;     ///< one past the last
  int64_t count = 1;   ///< the divisor along this axis (padding included with count_include_pad)
};

/// The span of output index o along an axis of input size n and output size on, with kernel k, stride
/// s and padding p (PyTorch's avg_pool2d / max_pool2d / adaptive_avg_pool2d window rules).
TG_HD PoolSpan pool_span(int64_t o, int64_t n, int64_t on, int64_t k, int64_t s, int64_t p, bool adaptive,
                         bool count_include_pad) {
  PoolSpan r;
  if (adaptive) {
    r.begin = (o * n) / on;                       // floor(o n / on)
    r.end = ((o + 1) * n + on - 1) / on;          // ceil((o + 1) n / on)
    r.count = r.end - r.begin;
    return r;
  }
  int64_t b = o * s - p, e = b + k;
  if (e > n + p) e = n + p;
  const int64_t padded = e - b;
  if (b < 0) b = 0;
  if (e > n) e = n;
  r.begin = b;
  r.end = e;
  r.count = count_include_pad ? padded : e - b;
  return r;
}

}  // namespace tg
