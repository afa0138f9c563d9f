/// \file
/// nn/norm.h: the normalization layers as Modules, with PyTorch's names, buffers and init:
/// BatchNorm1d, BatchNorm2d, BatchNorm3d (running_mean, running_var, num_batches_tracked), LayerNorm,
/// GroupNorm and InstanceNorm1d / InstanceNorm2d / InstanceNorm3d. Each forward is one call into ops/ops.h (ops/norm.cpp,
/// ops/norm_extra.cpp). The convolution layers are in nn/conv.h.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tensorgrad/nn/module.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace nn {

/// Options of BatchNorm1d / BatchNorm2d / BatchNorm3d, as libtorch's: BatchNorm2dOptions(64).eps(1e-3).momentum(0.01)
/// .affine(false).track_running_stats(false). libtorch's momentum may be unset (a cumulative average);
/// here it is always a number.
struct BatchNormOptions {
  /// The channels, C.
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}   // NOLINT: as libtorch's
  /// Added to the variance (default 1e-5).
  BatchNormOptions& eps(double e) { eps_ = e; return *this; }
  /// The weight of a batch's statistics in the running ones (default 0.1).
  BatchNormOptions& momentum(double m) { momentum_ = m; return *this; }
  /// Whether weight and bias exist (default true).
  BatchNormOptions& affine(bool a) { affine_ = a; return *this; }
  /// Whether the running statistics exist (default true).
  BatchNormOptions& track_running_stats(bool t) { track_running_stats_ = t; return *this; }
  int64_t num_features_;              ///< See the constructor.
  double eps_ = 1e-5;                 ///< See eps().
  double momentum_ = 0.1;             ///< See momentum().
  bool affine_ = true;                ///< See affine().
  bool track_running_stats_ = true;   ///< See track_running_stats().
};
/// BatchNorm1d's options (libtorch's name).
using BatchNorm1dOptions = BatchNormOptions;
/// BatchNorm2d's options (libtorch's name).
using BatchNorm2dOptions = BatchNormOptions;
/// BatchNorm3d's options (libtorch's name).
using BatchNorm3dOptions = BatchNormOptions;

/// Options of LayerNorm, as libtorch's: LayerNormOptions({256}).eps(1e-6).elementwise_affine(false).
struct LayerNormOptions {
  /// The trailing dims normalized over.
  LayerNormOptions(std::vector<int64_t> normalized_shape)   // NOLINT: as libtorch's
      : normalized_shape_(std::move(normalized_shape)) {}
  /// Added to the variance (default 1e-5).
  LayerNormOptions& eps(double e) { eps_ = e; return *this; }
  /// Whether weight and bias exist (default true).
  LayerNormOptions& elementwise_affine(bool a) { elementwise_affine_ = a; return *this; }
  std::vector<int64_t> normalized_shape_;   ///< See the constructor.
  double eps_ = 1e-5;                       ///< See eps().
  bool elementwise_affine_ = true;          ///< See elementwise_affine().
};

/// What the batch and instance normalizations share (PyTorch's _NormBase): weight (ones) and bias
/// (zeros) of num_features when affine; buffers running_mean (zeros), running_var (ones) and
/// num_batches_tracked (int64 0-d) when track_running_stats.
class NormBase : public Module {
 public:
  Tensor weight;                ///< (num_features), registered as "weight"; undefined unless affine
  Tensor bias;                  ///< (num_features), registered as "bias"; undefined unless affine
  Tensor running_mean;          ///< (num_features) buffer "running_mean"; undefined unless tracking
  Tensor running_var;           ///< (num_features) buffer "running_var"; undefined unless tracking
  Tensor num_batches_tracked;   ///< 0-d int64 buffer "num_batches_tracked"; undefined unless tracking
 protected:
  /// ShapeError unless num_features > 0; Error unless 0 <= momentum <= 1 and eps > 0; kind names
  /// the layer in those messages ("BatchNorm").
  NormBase(const char* kind, int64_t num_features, double eps, double momentum, bool affine, bool track_running_stats);
  /// No parameters: the state of a handle (TG_LAYER_HANDLE in nn/pimpl.h).
  NormBase() = default;
  int64_t num_features_;      ///< C
  double eps_;                ///< added to the variance
  double momentum_;           ///< weight of the batch statistics in the running ones
  bool affine_;               ///< whether weight and bias exist
  bool track_;                ///< whether the running statistics exist
};

/// What BatchNorm1d, BatchNorm2d and BatchNorm3d share (PyTorch's _BatchNorm): NormBase's tensors, the buffer
/// num_batches_tracked counting training batches. In training mode the batch statistics normalize and
/// the running ones are updated; in eval() the running ones normalize (the batch ones when not tracking).
class BatchNorm : public NormBase {
 public:
  /// See NormBase.
  BatchNorm(int64_t num_features, double eps, double momentum, bool affine, bool track_running_stats)
      : NormBase("BatchNorm", num_features, eps, momentum, affine, track_running_stats) {}
  /// batch_norm(x, ...) after the rank check of the concrete class.
  Tensor forward(const Tensor& x) override;
 protected:
  /// No parameters: the state of a handle (TG_LAYER_HANDLE in nn/pimpl.h).
  BatchNorm() = default;
  /// ShapeError unless x has a rank this layer accepts.
  virtual void check_input(const Tensor& x) const = 0;
  /// "BatchNorm2d(32, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)".
  std::string describe(const char* kind) const;
};

/// Batch normalization of (N, C) or (N, C, L) input (torch::nn::BatchNorm1d).
class BatchNorm1d : public BatchNorm {
 public:
  /// PyTorch's defaults: eps 1e-5, momentum 0.1, affine, tracking running statistics.
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true,
                       bool track_running_stats = true)
      : BatchNorm(num_features, eps, momentum, affine, track_running_stats) {}
  /// libtorch's form: BatchNorm1d(BatchNorm1dOptions(64).momentum(0.01)).
  explicit BatchNorm1d(const BatchNormOptions& o)
      : BatchNorm(o.num_features_, o.eps_, o.momentum_, o.affine_, o.track_running_stats_) {}
  /// "BatchNorm1d(32, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)".
  std::string name() const override { return describe("BatchNorm1d"); }
  /// A BatchNorm1d of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override {
    return std::make_unique<BatchNorm1d>(num_features_, eps_, momentum_, affine_, track_);
  }
 protected:
  /// ShapeError unless x is 2-D or 3-D.
  void check_input(const Tensor& x) const override;
  TG_LAYER_HANDLE(BatchNorm1d)
};

/// Batch normalization of (N, C, H, W) input (torch::nn::BatchNorm2d).
class BatchNorm2d : public BatchNorm {
 public:
  /// PyTorch's defaults: eps 1e-5, momentum 0.1, affine, tracking running statistics.
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true,
                       bool track_running_stats = true)
      : BatchNorm(num_features, eps, momentum, affine, track_running_stats) {}
  /// libtorch's form: BatchNorm2d(BatchNorm2dOptions(64).momentum(0.01)).
  explicit BatchNorm2d(const BatchNormOptions& o)
      : BatchNorm(o.num_features_, o.eps_, o.momentum_, o.affine_, o.track_running_stats_) {}
  /// "BatchNorm2d(32, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)".
  std::string name() const override { return describe("BatchNorm2d"); }
  /// A BatchNorm2d of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override {
    return std::make_unique<BatchNorm2d>(num_features_, eps_, momentum_, affine_, track_);
  }
 protected:
  /// ShapeError unless x is 4-D.
  void check_input(const Tensor& x) const override;
  TG_LAYER_HANDLE(BatchNorm2d)
};

/// Batch normalization of (N, C, D, H, W) input (torch::nn::BatchNorm3d).
class BatchNorm3d : public BatchNorm {
 public:
  /// PyTorch's defaults: eps 1e-5, momentum 0.1, affine, tracking running statistics.
  explicit BatchNorm3d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true,
                       bool track_running_stats = true)
      : BatchNorm(num_features, eps, momentum, affine, track_running_stats) {}
  /// libtorch's form: BatchNorm3d(BatchNorm3dOptions(64).momentum(0.01)).
  explicit BatchNorm3d(const BatchNormOptions& o)
      : BatchNorm(o.num_features_, o.eps_, o.momentum_, o.affine_, o.track_running_stats_) {}
  /// "BatchNorm3d(32, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)".
  std::string name() const override { return describe("BatchNorm3d"); }
  /// A BatchNorm3d of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override {
    return std::make_unique<BatchNorm3d>(num_features_, eps_, momentum_, affine_, track_);
  }
 protected:
  /// ShapeError unless x is 5-D.
  void check_input(const Tensor& x) const override;
  TG_LAYER_HANDLE(BatchNorm3d)
};

/// layer_norm(x, normalized_shape, weight, bias, eps) as a module (torch::nn::LayerNorm): weight
/// (ones) and bias (zeros) of normalized_shape when elementwise_affine.
class LayerNorm : public Module {
 public:
  /// ShapeError for an empty or non-positive normalized_shape.
  explicit LayerNorm(const std::vector<int64_t>& normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  /// libtorch's form: LayerNorm(LayerNormOptions({256}).eps(1e-6)).
  explicit LayerNorm(const LayerNormOptions& o) : LayerNorm(o.normalized_shape_, o.eps_, o.elementwise_affine_) {}
  /// x (*, normalized_shape) -> the same shape.
  Tensor forward(const Tensor& x) override { return layer_norm(x, normalized_shape_, weight, bias, eps_); }
  /// "LayerNorm((256,), eps=1e-05, elementwise_affine=True)".
  std::string name() const override;
  /// A LayerNorm of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override {
    return std::make_unique<LayerNorm>(normalized_shape_, eps_, affine_);
  }
  Tensor weight;   ///< normalized_shape, registered as "weight"; undefined unless elementwise_affine
  Tensor bias;     ///< normalized_shape, registered as "bias"; undefined unless elementwise_affine
 private:
  std::vector<int64_t> normalized_shape_;
  double eps_;
  bool affine_;
  TG_LAYER_HANDLE(LayerNorm)
};

/// group_norm(x, num_groups, weight, bias, eps) as a module (torch::nn::GroupNorm): weight (ones) and
/// bias (zeros) of num_channels when affine. Input (N, num_channels, *).
class GroupNorm : public Module {
 public:
  /// ShapeError unless num_groups > 0 and num_channels is a positive multiple of it (PyTorch's
  /// "num_channels must be divisible by num_groups").
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true);
  /// x (N, num_channels, *) -> the same shape.
  Tensor forward(const Tensor& x) override { return group_norm(x, num_groups_, weight, bias, eps_); }
  /// "GroupNorm(2, 6, eps=1e-05, affine=True)".
  std::string name() const override;
  /// A GroupNorm of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override {
    return std::make_unique<GroupNorm>(num_groups_, num_channels_, eps_, affine_);
  }
  Tensor weight;   ///< (num_channels), registered as "weight"; undefined unless affine
  Tensor bias;     ///< (num_channels), registered as "bias"; undefined unless affine
 private:
  int64_t num_groups_, num_channels_;
  double eps_;
  bool affine_;
  TG_LAYER_HANDLE(GroupNorm)
};

/// Options of InstanceNorm1d / InstanceNorm2d / InstanceNorm3d, as libtorch's: InstanceNorm2dOptions(64).eps(1e-3)
/// .momentum(0.01).affine(true).track_running_stats(true). The defaults differ from BatchNorm's: no
/// affine parameters and no running statistics.
struct InstanceNormOptions {
  /// The channels, C.
  InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}   // NOLINT: as libtorch's
  /// Added to the variance (default 1e-5).
  InstanceNormOptions& eps(double e) { eps_ = e; return *this; }
  /// The weight of a batch's statistics in the running ones (default 0.1).
  InstanceNormOptions& momentum(double m) { momentum_ = m; return *this; }
  /// Whether weight and bias exist (default false).
  InstanceNormOptions& affine(bool a) { affine_ = a; return *this; }
  /// Whether the running statistics exist (default false).
  InstanceNormOptions& track_running_stats(bool t) { track_running_stats_ = t; return *this; }
  int64_t num_features_;               ///< See the constructor.
  double eps_ = 1e-5;                  ///< See eps().
  double momentum_ = 0.1;              ///< See momentum().
  bool affine_ = false;                ///< See affine().
  bool track_running_stats_ = false;   ///< See track_running_stats().
};
/// InstanceNorm1d's options (libtorch's name).
using InstanceNorm1dOptions = InstanceNormOptions;
/// InstanceNorm2d's options (libtorch's name).
using InstanceNorm2dOptions = InstanceNormOptions;
/// InstanceNorm3d's options (libtorch's name).
using InstanceNorm3dOptions = InstanceNormOptions;

/// What InstanceNorm1d, InstanceNorm2d and InstanceNorm3d share (PyTorch's _InstanceNorm): NormBase's tensors
/// (num_batches_tracked, as in PyTorch, never counts up). In training, or when not tracking, each
/// instance's statistics normalize and the running ones (if any) are updated; in eval() with tracking
/// the running ones normalize. An unbatched input (no N) is normalized as a batch of one.
class InstanceNorm : public NormBase {
 public:
  /// See NormBase.
  InstanceNorm(int64_t num_features, double eps, double momentum, bool affine, bool track_running_stats)
      : NormBase("InstanceNorm", num_features, eps, momentum, affine, track_running_stats) {}
  /// instance_norm(x, ...) after the rank check of the concrete class; ShapeError when the channels
  /// are not num_features and the layer has per-channel tensors (affine or tracking).
  Tensor forward(const Tensor& x) override;
 protected:
  /// No parameters: the state of a handle (TG_LAYER_HANDLE in nn/pimpl.h).
  InstanceNorm() = default;
  /// The rank of an unbatched input (2 for InstanceNorm1d, 3 for InstanceNorm2d, 4 for InstanceNorm3d); a batched one has one more.
  virtual int64_t unbatched_dim() const = 0;
  /// "InstanceNorm1d", "InstanceNorm2d" or "InstanceNorm3d", for messages.
  virtual const char* kind() const = 0;
  /// "InstanceNorm2d(32, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)".
  std::string describe() const;
};

/// Instance normalization of (N, C, L) or unbatched (C, L) input (torch::nn::InstanceNorm1d).
class InstanceNorm1d : public InstanceNorm {
 public:
  /// PyTorch's defaults: eps 1e-5, momentum 0.1, no affine parameters, no running statistics.
  explicit InstanceNorm1d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = false,
                          bool track_running_stats = false)
      : InstanceNorm(num_features, eps, momentum, affine, track_running_stats) {}
  /// libtorch's form: InstanceNorm1d(InstanceNorm1dOptions(64).affine(true)).
  explicit InstanceNorm1d(const InstanceNormOptions& o)
      : InstanceNorm(o.num_features_, o.eps_, o.momentum_, o.affine_, o.track_running_stats_) {}
  /// "InstanceNorm1d(32, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)".
  std::string name() const override { return describe(); }
  /// An InstanceNorm1d of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override {
    return std::make_unique<InstanceNorm1d>(num_features_, eps_, momentum_, affine_, track_);
  }
 protected:
  /// 2: (C, L).
  int64_t unbatched_dim() const override { return 2; }
  /// "InstanceNorm1d".
  const char* kind() const override { return "InstanceNorm1d"; }
  TG_LAYER_HANDLE(InstanceNorm1d)
};

/// Instance normalization of (N, C, H, W) or unbatched (C, H, W) input (torch::nn::InstanceNorm2d).
class InstanceNorm2d : public InstanceNorm {
 public:
  /// PyTorch's defaults: eps 1e-5, momentum 0.1, no affine parameters, no running statistics.
  explicit InstanceNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = false,
                          bool track_running_stats = false)
      : InstanceNorm(num_features, eps, momentum, affine, track_running_stats) {}
  /// libtorch's form: InstanceNorm2d(InstanceNorm2dOptions(64).affine(true)).
  explicit InstanceNorm2d(const InstanceNormOptions& o)
      : InstanceNorm(o.num_features_, o.eps_, o.momentum_, o.affine_, o.track_running_stats_) {}
  /// "InstanceNorm2d(32, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)".
  std::string name() const override { return describe(); }
  /// An InstanceNorm2d of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override {
    return std::make_unique<InstanceNorm2d>(num_features_, eps_, momentum_, affine_, track_);
  }
 protected:
  /// 3: (C, H, W).
  int64_t unbatched_dim() const override { return 3; }
  /// "InstanceNorm2d".
  const char* kind() const override { return "InstanceNorm2d"; }
  TG_LAYER_HANDLE(InstanceNorm2d)
};

/// Instance normalization of (N, C, D, H, W) or unbatched (C, D, H, W) input (torch::nn::InstanceNorm3d).
class InstanceNorm3d : public InstanceNorm {
 public:
  /// PyTorch's defaults: eps 1e-5, momentum 0.1, no affine parameters, no running statistics.
  explicit InstanceNorm3d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = false,
                          bool track_running_stats = false)
      : InstanceNorm(num_features, eps, momentum, affine, track_running_stats) {}
  /// libtorch's form: InstanceNorm3d(InstanceNorm3dOptions(64).affine(true)).
  explicit InstanceNorm3d(const InstanceNormOptions& o)
      : InstanceNorm(o.num_features_, o.eps_, o.momentum_, o.affine_, o.track_running_stats_) {}
  /// "InstanceNorm3d(32, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)".
  std::string name() const override { return describe(); }
  /// An InstanceNorm3d of the same configuration (for clone()).
  std::unique_ptr<Module> new_instance() const override {
    return std::make_unique<InstanceNorm3d>(num_features_, eps_, momentum_, affine_, track_);
  }
 protected:
  /// 4: (C, D, H, W).
  int64_t unbatched_dim() const override { return 4; }
  /// "InstanceNorm3d".
  const char* kind() const override { return "InstanceNorm3d"; }
  TG_LAYER_HANDLE(InstanceNorm3d)
};

/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using BatchNorm1dImpl = BatchNorm1d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using BatchNorm2dImpl = BatchNorm2d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using LayerNormImpl = LayerNorm;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using GroupNormImpl = GroupNorm;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using InstanceNorm1dImpl = InstanceNorm1d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using InstanceNorm2dImpl = InstanceNorm2d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using InstanceNorm3dImpl = InstanceNorm3d;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using BatchNorm3dImpl = BatchNorm3d;

}  // namespace nn
}  // namespace tg
