/// \file
/// ops/advanced_index.h: the parts of ops/advanced_index.cpp that tg::index (ops/slicing.cpp) and
/// Tensor::index_put_ (ops/inplace.cpp) share. Internal to ops/.
#pragma once
#include <vector>

#include "tensorgrad/autograd/tensor.h"
#include "tensorgrad/core/indexing.h"

namespace tg {
namespace detail {

/// Whether some entry of indices is an index Tensor (advanced indexing).
bool has_tensor_index(const std::vector<TensorIndex>& indices);
/// x.index(indices) with index Tensors: a differentiable copy (ops.h, tg::index).
Tensor advanced_index(const Tensor& x, const std::vector<TensorIndex>& indices);
/// tg::index_put with op naming the caller in its errors ("index_put" or "index_put_").
Tensor index_put(const char* op, const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& values,
                 bool accumulate);

}  // namespace detail
}  // namespace tg
