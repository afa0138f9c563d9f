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
  /// Batch, input channels, input height and width.
  int64_t N = 0, C = 0, H = 0, W = 0;
  /** \var C
      Input channels. */
  /** \var H
      Input height. */
  /** \var W
      Input width. */
  /// Output channels, kernel height and width, output height and width.
  int64_t O = 0, KH = 0, KW = 0, OH = 0, OW = 0;
  /** \var KH
      Kernel height. */
  /** \var KW
      Kernel width. */
  /** \var OH
      Output height. */
  /** \var OW
      Output width. */
  /// Steps between windows, zero padding on each side, spacing of the kernel taps.
  int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dil_h = 1, dil_w = 1;
  /** \var stride_w
      Step between windows along the width. */
  /** \var pad_h
      Zero rows added above and below. */
  /** \var pad_w
      Zero columns added left and right. */
  /** \var dil_h
      Rows between kernel taps. */
  /** \var dil_w
      Columns between kernel taps. */
  /// Channel groups: input channels g C/groups.. feed output channels g O/groups.. only.
  int64_t groups = 1;
  /// float32 or float64 (every operand).
  DType dtype = kFloat32;
};

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

}  // namespace tg
