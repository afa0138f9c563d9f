// backend/cpu/conv.h: the CPU kernels of convolution and pooling (backend/cpu/conv.cpp), which the CPU
// backend's conv2d / max_pool2d / avg_pool2d methods (backend/cpu/cpu_backend.h) call. Same contracts as
// those methods in backend/backend.h; the CUDA twin is backend/cuda/conv.cu.
#pragma once
#include "tensorgrad/backend/backend.h"

namespace tg {
namespace detail {

/// Backend::conv2d on the CPU: oneDNN in float32 where built with it, else im2col + GEMM per image.
void cpu_conv2d(const RawTensor& x, const RawTensor& weight, const RawTensor& bias, const Conv2dArgs& a, const RawTensor& out);
/// Backend::conv2d_backward on the CPU.
void cpu_conv2d_backward(const RawTensor& x, const RawTensor& weight, const RawTensor& dy, const Conv2dArgs& a,
                         const RawTensor& dx, const RawTensor& dweight, const RawTensor& dbias);
/// How many conv2d forward and backward calls oneDNN has computed in this process (Note [conv2d
/// through oneDNN]); 0 in a build without oneDNN. Tests read it to see which path ran.
int64_t cpu_conv2d_onednn_calls();
/// Backend::max_pool2d on the CPU.
void cpu_max_pool2d(const RawTensor& x, const Pool2dArgs& a, const RawTensor& out, const RawTensor& indices);
/// Backend::max_pool2d_backward on the CPU.
void cpu_max_pool2d_backward(const RawTensor& dy, const RawTensor& indices, const Pool2dArgs& a, const RawTensor& dx);
/// Backend::avg_pool2d on the CPU.
void cpu_avg_pool2d(const RawTensor& x, const Pool2dArgs& a, const RawTensor& out);
/// Backend::avg_pool2d_backward on the CPU.
void cpu_avg_pool2d_backward(const RawTensor& dy, const Pool2dArgs& a, const RawTensor& dx);

}  // namespace detail
}  // namespace tg
