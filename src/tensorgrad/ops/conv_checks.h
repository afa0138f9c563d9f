/// \file
/// ops/conv_checks.h: PyTorch's argument checks that the convolutions of ops/conv.cpp (1-D and 2-D)
/// and ops/conv3d.cpp (3-D) share. Internal to ops/.
/// \cond INTERNAL
#pragma once
#include <cstdint>

#include "tensorgrad/autograd/tensor.h"

namespace tg {
namespace detail {

/// ShapeError naming op, with PyTorch's messages, unless groups, the n strides, paddings and
/// dilations, the weight w and the bias fit a convolution of x (N, C, *): w is (out_channels,
/// C / groups, *kernel), or for a transposed one (C, out_channels / groups, *kernel). The callers
/// check the ranks and the output size themselves.
void check_conv_params(const char* op, bool transposed, const Shape& x, const Shape& w, const Tensor& bias,
                       const int64_t* stride, const int64_t* padding, const int64_t* dilation, int n, int64_t groups);

}  // namespace detail
}  // namespace tg
/// \endcond
