// nn/norm.cpp: the constructors (PyTorch's reset_parameters / reset_running_stats), forward and
// printing of nn/norm.h's layers.
#include "tensorgrad/nn/norm.h"

#include <sstream>

#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace nn {

NormBase::NormBase(const char* kind, int64_t num_features, double eps, double momentum, bool affine,
                   bool track_running_stats)
    : num_features_(num_features), eps_(eps), momentum_(momentum), affine_(affine), track_(track_running_stats) {
  TG_CHECK(num_features > 0, ShapeError, kind, ": num_features must be positive, got ", num_features);
  TG_CHECK(momentum >= 0 && momentum <= 1, Error, kind, ": momentum must be in [0, 1], got ", momentum);
  TG_CHECK(eps > 0, Error, kind, ": eps must be positive, got ", eps);
  if (affine) {
    weight = Tensor(prim::full({num_features}, 1.0));
    bias = Tensor(prim::full({num_features}, 0.0));
    register_parameter("weight", weight);
    register_parameter("bias", bias);
  }
  if (track_running_stats) {
    running_mean = Tensor(prim::full({num_features}, 0.0));
    running_var = Tensor(prim::full({num_features}, 1.0));
    num_batches_tracked = Tensor(prim::full({}, 0.0, kInt64));
    register_buffer("running_mean", running_mean);
    register_buffer("running_var", running_var);
    register_buffer("num_batches_tracked", num_batches_tracked);
  }
}

Tensor BatchNorm::forward(const Tensor& x) {
  check_input(x);
  const bool use_batch_stats = is_training() || !track_;
  if (is_training() && track_) {
    NoGradGuard no_grad;
    prim::binary_(BinaryOp::Add, num_batches_tracked.data(), prim::scalar_like(1.0, num_batches_tracked.data()),
                  "BatchNorm");
  }
  const bool update = is_training() && track_;
  return batch_norm(x, update || !use_batch_stats ? running_mean : Tensor(),
                    update || !use_batch_stats ? running_var : Tensor(), weight, bias, use_batch_stats, momentum_,
                    eps_);
}

std::string BatchNorm::describe(const char* kind) const {
  std::ostringstream os;
  os << kind << "(" << num_features_ << ", eps=" << eps_ << ", momentum=" << momentum_
     << ", affine=" << (affine_ ? "True" : "False") << ", track_running_stats=" << (track_ ? "True" : "False") << ")";
  return os.str();
}

void BatchNorm1d::check_input(const Tensor& x) const {
  TG_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError, "BatchNorm1d: expected 2D or 3D input (got ", x.dim(),
           "D input of size ", shape_str(x.shape()), ")");
}

void BatchNorm2d::check_input(const Tensor& x) const {
  TG_CHECK(x.dim() == 4, ShapeError, "BatchNorm2d: expected 4D input (got ", x.dim(), "D input of size ",
           shape_str(x.shape()), ")");
}

void BatchNorm3d::check_input(const Tensor& x) const {
  TG_CHECK(x.dim() == 5, ShapeError, "BatchNorm3d: expected 5D input (got ", x.dim(), "D input of size ",
           shape_str(x.shape()), ")");
}

LayerNorm::LayerNorm(const std::vector<int64_t>& normalized_shape, double eps, bool elementwise_affine)
    : normalized_shape_(normalized_shape), eps_(eps), affine_(elementwise_affine) {
  TG_CHECK(!normalized_shape.empty(), ShapeError, "LayerNorm: normalized_shape must not be empty");
  for (int64_t s : normalized_shape)
    TG_CHECK(s > 0, ShapeError, "LayerNorm: normalized_shape entries must be positive, got ",
             shape_str(Shape(normalized_shape.begin(), normalized_shape.end())));
  if (elementwise_affine) {
    const Shape shape(normalized_shape.begin(), normalized_shape.end());
    weight = Tensor(prim::full(shape, 1.0));
    bias = Tensor(prim::full(shape, 0.0));
    register_parameter("weight", weight);
    register_parameter("bias", bias);
  }
}

std::string LayerNorm::name() const {
  std::ostringstream os;
  os << "LayerNorm((";
  for (std::size_t i = 0; i < normalized_shape_.size(); ++i) os << (i ? ", " : "") << normalized_shape_[i];
  os << (normalized_shape_.size() == 1 ? ",)" : ")") << ", eps=" << eps_
     << ", elementwise_affine=" << (affine_ ? "True" : "False") << ")";
  return os.str();
}

GroupNorm::GroupNorm(int64_t num_groups, int64_t num_channels, double eps, bool affine)
    : num_groups_(num_groups), num_channels_(num_channels), eps_(eps), affine_(affine) {
  TG_CHECK(num_groups > 0 && num_channels > 0, ShapeError, "GroupNorm: num_groups and num_channels must be positive, got ",
           num_groups, " and ", num_channels);
  TG_CHECK(num_channels % num_groups == 0, ShapeError, "GroupNorm: num_channels must be divisible by num_groups (",
           num_channels, " and ", num_groups, ")");
  if (affine) {
    weight = Tensor(prim::full({num_channels}, 1.0));
    bias = Tensor(prim::full({num_channels}, 0.0));
    register_parameter("weight", weight);
    register_parameter("bias", bias);
  }
}

std::string GroupNorm::name() const {
  std::ostringstream os;
  os << "GroupNorm(" << num_groups_ << ", " << num_channels_ << ", eps=" << eps_
     << ", affine=" << (affine_ ? "True" : "False") << ")";
  return os.str();
}

Tensor InstanceNorm::forward(const Tensor& x) {
  // x (N, C, *spatial) or unbatched (C, *spatial): PyTorch's _InstanceNorm.forward
  const int64_t rank = unbatched_dim();
  TG_CHECK(x.dim() == rank || x.dim() == rank + 1, ShapeError, kind(), ": expected ", rank, "D or ", rank + 1,
           "D input (got ", x.dim(), "D input of size ", shape_str(x.shape()), ")");
  const int64_t feature_dim = x.dim() - rank;
  const int64_t channels = x.shape()[static_cast<std::size_t>(feature_dim)];
  // PyTorch raises this for affine and only warns otherwise; running statistics of another size cannot
  // be used either, so tracking raises too
  TG_CHECK(channels == num_features_ || !(affine_ || track_), ShapeError, kind(), ": expected input's size at dim=",
           feature_dim, " to match num_features (", num_features_, "), but got: ", channels, " (input of size ",
           shape_str(x.shape()), ")");
  const bool batched = x.dim() == rank + 1;
  const Tensor y = instance_norm(batched ? x : unsqueeze(x, 0), running_mean, running_var, weight, bias,
                                 is_training() || !track_, momentum_, eps_);
  return batched ? y : squeeze(y, 0);
}

std::string InstanceNorm::describe() const {
  std::ostringstream os;
  os << kind() << "(" << num_features_ << ", eps=" << eps_ << ", momentum=" << momentum_
     << ", affine=" << (affine_ ? "True" : "False") << ", bias=" << (affine_ ? "True" : "False")
     << ", track_running_stats=" << (track_ ? "True" : "False") << ")";   // PyTorch 2.x prints bias (= affine here)
  return os.str();
}

}  // namespace nn
}  // namespace tg
