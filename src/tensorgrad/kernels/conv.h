/// \file
/// kernels/conv.h: the geometry of a 2-D convolution (Conv2dArgs), read by the CPU loops
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

}  // namespace tg
