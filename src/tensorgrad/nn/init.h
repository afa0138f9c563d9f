/// \file
/// nn/init.h: in-place parameter initialisers with PyTorch's names and formulas (torch.nn.init).
/// Each fills an existing Tensor without recording a graph; random ones draw from the Philox stream.
#pragma once
#include "tensorgrad/autograd/tensor.h"

namespace tg {
namespace nn {
namespace init {

/// While one is alive on this thread, the initialisers below check their arguments but leave the
/// values as they are and draw nothing from the random stream. Module::clone builds its fresh copy
/// under one (Note [Module clone], nn/module.cpp), since it overwrites every value. Guards nest.
class SkipInitGuard {
 public:
  /// Starts skipping on this thread.
  SkipInitGuard();
  /// Stops skipping unless an outer guard is still alive.
  ~SkipInitGuard();
  SkipInitGuard(const SkipInitGuard&) = delete;
  SkipInitGuard& operator=(const SkipInitGuard&) = delete;
  /// True while some SkipInitGuard is alive on this thread.
  static bool is_enabled();
};

/// fan_in = size(1) * receptive field, fan_out = size(0) * receptive field (2-D: (out, in)).
/// Returns {fan_in, fan_out}; ShapeError for fewer than 2 dims.
std::pair<int64_t, int64_t> fan_in_and_out(const Tensor& v);

// Each returns v. The random ones need a floating v (DTypeError); all throw Error for an undefined v.
/// Uniform in [a, b) (torch.nn.init.uniform_).
Tensor& uniform_(Tensor& v, double a = 0, double b = 1);
/// Normal with the given mean and standard deviation (torch.nn.init.normal_).
Tensor& normal_(Tensor& v, double mean = 0, double std = 1);
/// Every element value (torch.nn.init.constant_).
Tensor& constant_(Tensor& v, double value);
/// Every element 0.
Tensor& zeros_(Tensor& v);
/// Every element 1.
Tensor& ones_(Tensor& v);
/// U(-bound, bound), bound = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2)) (leaky_relu gain).
Tensor& kaiming_uniform_(Tensor& v, double a = 0);
/// N(0, std), std = gain / sqrt(fan_in), as kaiming_normal_ with nonlinearity leaky_relu(a).
Tensor& kaiming_normal_(Tensor& v, double a = 0);
/// U(-bound, bound), bound = gain * sqrt(6 / (fan_in + fan_out)).
Tensor& xavier_uniform_(Tensor& v, double gain = 1);
/// N(0, std), std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor& xavier_normal_(Tensor& v, double gain = 1);

}  // namespace init
}  // namespace nn
}  // namespace tg
