/// \file
/// kernels/pool.h: where each pooling window lies in its input plane, and its maximum and mean: written
/// once for the CPU loops (backend/cpu/conv.cpp) and the CUDA kernels (backend/cuda/conv.cu), so both
/// backends pool the same elements in the same order. Compiled by g++ and by nvcc.
#pragma once
#include <cmath>
#include <cstdint>

#include "tensorgrad/core/macros.h"

namespace tg {

/// The geometry of one 2-D pooling (Backend::max_pool2d, avg_pool2d): x (P, H, W) planes (P = N C)
/// -> out (P, OH, OW). With adaptive, window i along the height is [floor(i H / OH), ceil((i + 1) H /
/// OH)) and the kernel, stride and padding fields are unused (PyTorch's adaptive pooling).
struct Pool2dArgs {
  int64_t P = 0;   ///< Planes (batch times channels).
  int64_t H = 0;   ///< Input height.
  int64_t W = 0;   ///< Input width.
  int64_t OH = 0;   ///< Output height.
  int64_t OW = 0;   ///< Output width.
  int64_t KH = 1;   ///< Window height (the padding is -inf for max, zeros for avg).
  int64_t KW = 1;   ///< Window width.
  int64_t stride_h = 1;   ///< Step between windows along the height.
  int64_t stride_w = 1;   ///< Step between windows along the width.
  int64_t pad_h = 0;   ///< Padding rows on each side.
  int64_t pad_w = 0;   ///< Padding columns on each side.
  int64_t dil_h = 1;   ///< Spacing between the window's taps along the height (max_pool2d's dilation; 1 for the averages).
  int64_t dil_w = 1;   ///< Spacing between the window's taps along the width.
  /// avg: divide by the whole window, padding included (PyTorch's count_include_pad), or by the
  /// elements inside the input only.
  bool count_include_pad = true;
  /// Adaptive windows (see the struct comment).
  bool adaptive = false;
};


/// \cond INTERNAL
/// One window of a pooling along one axis: the input rows begin, begin + step, ... below end that it
/// reads (clipped to the input) and the count its average divides by.
struct PoolSpan {
  int64_t begin = 0;   ///< first input row (column) read
  int64_t end = 0;     ///< one past the last
  int64_t step = 1;    ///< distance between the rows read (max_pool2d's dilation)
  int64_t count = 1;   ///< the divisor along this axis (padding included with count_include_pad)
};

/// The span of output index o along an axis of input size n and output size on, with kernel k, stride
/// s, padding p and dilation d (PyTorch's avg_pool2d / max_pool2d / adaptive_avg_pool2d window rules).
/// A window may reach past the padded input only with ceil_mode (the output size rule in ops/conv.cpp
/// keeps its first row inside the input or the left padding): the average's divisor then counts the
/// window clipped to the padded input, as PyTorch's does.
TG_HD PoolSpan pool_span(int64_t o, int64_t n, int64_t on, int64_t k, int64_t s, int64_t p, int64_t d, bool adaptive,
                         bool count_include_pad) {
  PoolSpan r;
  if (adaptive) {
    r.begin = (o * n) / on;                       // floor(o n / on)
    r.end = ((o + 1) * n + on - 1) / on;          // ceil((o + 1) n / on)
    r.count = r.end - r.begin;
    return r;
  }
  int64_t b = o * s - p, e = b + (k - 1) * d + 1;
  if (e > n + p) e = n + p;
  const int64_t padded = e - b;
  if (b < 0) b += ((-b + d - 1) / d) * d;   // the first tap inside the input
  if (e > n) e = n;
  r.begin = b;
  r.end = e;
  r.step = d;
  r.count = count_include_pad ? padded : e - b;   // d is 1 whenever count is used (avg_pool2d)
  return r;
}

/// The span of output row oh of a.
TG_HD PoolSpan pool_span_h(const Pool2dArgs& a, int64_t oh) {
  return pool_span(oh, a.H, a.OH, a.KH, a.stride_h, a.pad_h, a.dil_h, a.adaptive, a.count_include_pad);
}

/// The span of output column ow of a.
TG_HD PoolSpan pool_span_w(const Pool2dArgs& a, int64_t ow) {
  return pool_span(ow, a.W, a.OW, a.KW, a.stride_w, a.pad_w, a.dil_w, a.adaptive, a.count_include_pad);
}

/// The maximum of window (sh, sw) of plane (rows W elements apart), as max_pool2d takes it on both
/// backends: NaN wins (PyTorch's rule: a NaN anywhere in the window is the result), and among equal
/// values the first in row-major order; at receives its position h W + w in the plane.
template <class T>
TG_HD T max_window(const T* plane, int64_t W, const PoolSpan& sh, const PoolSpan& sw, int64_t& at) {
  T best = -T(INFINITY);
  at = sh.begin * W + sw.begin;
  for (int64_t h = sh.begin; h < sh.end; h += sh.step)
    for (int64_t w = sw.begin; w < sw.end; w += sw.step) {
      const T v = plane[h * W + w];
      if (v > best || v != v) {
        best = v;
        at = h * W + w;
      }
    }
  return best;
}

/// The divisor of window (sh, sw) in avg_pool2d (padding counted with count_include_pad).
TG_HD int64_t avg_divisor(const PoolSpan& sh, const PoolSpan& sw) { return sh.count * sw.count; }

/// The mean of window (sh, sw) of plane (rows W elements apart): the sum of the elements inside the
/// input, in row-major order, divided by avg_divisor. avg_pool2d's backward gives each of those
/// elements dy / avg_divisor.
template <class T>
TG_HD T avg_window(const T* plane, int64_t W, const PoolSpan& sh, const PoolSpan& sw) {
  T s = T(0);
  for (int64_t h = sh.begin; h < sh.end; ++h)
    for (int64_t w = sw.begin; w < sw.end; ++w) s += plane[h * W + w];
  return s / T(avg_divisor(sh, sw));
}

/// \endcond

}  // namespace tg
