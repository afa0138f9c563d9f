/// \file
/// kernels/conv.h: the geometry of a 2-D convolution (Conv2dArgs) and the one rule im2col and col2im
/// follow on both backends: which input element a kernel tap of an output position reads
/// (conv_input_index), and its inverse (conv_output_index). Read by the CPU loops
/// (backend/cpu/conv.cpp) and the CUDA kernels (backend/cuda/conv.cu). Compiled by g++ and by nvcc.
#pragma once
#include <cstdint>

#include "tensorgrad/core/device.h"
#include "tensorgrad/core/macros.h"

namespace tg {

/// The geometry of one 2-D convolution (Backend::conv2d): x (N, C, H, W), weight (O, C / groups, KH,
/// KW), out (N, O, OH, OW) with OH = (H + 2 pad_h - dil_h (KH - 1) - 1) / stride_h + 1 (likewise OW).
/// Validated in prim/conv.cpp: every size positive, OH and OW >= 1.
struct Conv2dArgs {
  int64_t N = 0;   ///< Batch.
  int64_t C = 0;   ///< Input channels.
  int64_t H = 0;   ///< Input height.
  int64_t W = 0;   ///< Input width.
  int64_t O = 0;   ///< Output channels.
  int64_t KH = 0;   ///< Kernel height.
  int64_t KW = 0;   ///< Kernel width.
  int64_t OH = 0;   ///< Output height.
  int64_t OW = 0;   ///< Output width.
  int64_t stride_h = 1;   ///< Step between windows along the height.
  int64_t stride_w = 1;   ///< Step between windows along the width.
  int64_t pad_h = 0;   ///< Zero rows added above and below.
  int64_t pad_w = 0;   ///< Zero columns added left and right.
  int64_t dil_h = 1;   ///< Rows between kernel taps.
  int64_t dil_w = 1;   ///< Columns between kernel taps.
  /// Channel groups: input channels g C/groups.. feed output channels g O/groups.. only.
  int64_t groups = 1;
  /// float32 or float64 (every operand).
  DType dtype = kFloat32;
};

/// \cond INTERNAL
/// The input row (or column) that kernel tap k of output row o reads, along an axis with this stride,
/// padding and dilation: o stride - pad + k dil. A value outside [0, input size) reads the zero padding.
TG_HD int64_t conv_input_index(int64_t o, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
  return o * stride - pad + k * dil;
}

/// The inverse of conv_input_index for a fixed tap k: the output row o whose tap k reads input row i,
/// or -1 when no output row of the `on` there are does (i + pad - k dil is negative, not a multiple of
/// the stride, or beyond the last row). col2im sums over the taps for which it is not -1.
TG_HD int64_t conv_output_index(int64_t i, int64_t k, int64_t stride, int64_t pad, int64_t dil, int64_t on) {
  const int64_t t = i + pad - k * dil;   // = o stride
  if (t < 0 || t % stride != 0) return -1;
  const int64_t o = t / stride;
  return o < on ? o : -1;
}

/// \endcond

}  // namespace tg
