/// \file
/// nn/activation.h: the activation modules GELU, SiLU, Softplus and LeakyReLU with PyTorch's options
/// (torch::nn::GELUOptions, ...), each forward one call into ops/ops.h. ReLU, Sigmoid and Tanh are in
/// nn/layers.h; the math is in kernels/elementwise.h.
#pragma once
#include <memory>
#include <string>

#include "tensorgrad/nn/module.h"
#include "tensorgrad/ops/ops.h"

namespace tg {
namespace nn {

/// Options of GELU (torch::nn::GELUOptions): GELUOptions().approximate("tanh").
struct GELUOptions {
  /// "none" (erf, the default) or "tanh".
  GELUOptions& approximate(std::string a) { approximate_ = std::move(a); return *this; }
  /// See approximate().
  std::string approximate_ = "none";
};

/// gelu(x, approximate) as a module (torch::nn::GELU); prints as "GELU(approximate='none')".
class GELU : public Module {
 public:
  /// approximate "none" or "tanh"; Error for another string.
  explicit GELU(std::string approximate = "none");
  /// With options.
  explicit GELU(const GELUOptions& options) : GELU(options.approximate_) {}
  /// gelu(x, approximate), any shape.
  Tensor forward(const Tensor& x) override { return gelu(x, approximate_); }
  /// "GELU(approximate='none')".
  std::string name() const override { return "GELU(approximate='" + approximate_ + "')"; }
  /// A GELU with the same option (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<GELU>(approximate_); }
 private:
  std::string approximate_;
  TG_LAYER_HANDLE(GELU)
};

/// silu(x) as a module (torch::nn::SiLU).
class SiLU : public Module {
 public:
  /// silu(x), any shape.
  Tensor forward(const Tensor& x) override { return silu(x); }
  /// "SiLU()".
  std::string name() const override { return "SiLU()"; }
  /// A SiLU (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<SiLU>(); }
  TG_LAYER_HANDLE_DEFAULT(SiLU)
};

/// Options of Softplus (torch::nn::SoftplusOptions): SoftplusOptions().beta(2).threshold(10).
struct SoftplusOptions {
  /// The sharpness (default 1); non-zero.
  SoftplusOptions& beta(double b) { beta_ = b; return *this; }
  /// Above beta x > threshold the result is x itself (default 20).
  SoftplusOptions& threshold(double t) { threshold_ = t; return *this; }
  /// See beta().
  double beta_ = 1;
  /// See threshold().
  double threshold_ = 20;
};

/// softplus(x, beta, threshold) as a module (torch::nn::Softplus); prints "Softplus(beta=1, threshold=20)".
class Softplus : public Module {
 public:
  /// Error when beta is 0 or NaN.
  explicit Softplus(double beta = 1, double threshold = 20);
  /// With options.
  explicit Softplus(const SoftplusOptions& options) : Softplus(options.beta_, options.threshold_) {}
  /// softplus(x, beta, threshold), any shape.
  Tensor forward(const Tensor& x) override { return softplus(x, beta_, threshold_); }
  /// "Softplus(beta=1, threshold=20)".
  std::string name() const override;
  /// A Softplus with the same options (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Softplus>(beta_, threshold_); }
 private:
  double beta_, threshold_;
  TG_LAYER_HANDLE(Softplus)
};

/// Options of LeakyReLU (torch::nn::LeakyReLUOptions): LeakyReLUOptions().negative_slope(0.2).
struct LeakyReLUOptions {
  /// The slope for x < 0 (default 0.01).
  LeakyReLUOptions& negative_slope(double s) { negative_slope_ = s; return *this; }
  /// See negative_slope().
  double negative_slope_ = 0.01;
};

/// leaky_relu(x, negative_slope) as a module (torch::nn::LeakyReLU); prints "LeakyReLU(negative_slope=0.01)".
class LeakyReLU : public Module {
 public:
  /// The slope for x < 0.
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope_(negative_slope) {}
  /// With options.
  explicit LeakyReLU(const LeakyReLUOptions& options) : LeakyReLU(options.negative_slope_) {}
  /// leaky_relu(x, negative_slope), any shape.
  Tensor forward(const Tensor& x) override { return leaky_relu(x, negative_slope_); }
  /// "LeakyReLU(negative_slope=0.01)".
  std::string name() const override;
  /// A LeakyReLU with the same slope (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<LeakyReLU>(negative_slope_); }
 private:
  double negative_slope_;
  TG_LAYER_HANDLE(LeakyReLU)
};

/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using GELUImpl = GELU;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using SiLUImpl = SiLU;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using SoftplusImpl = Softplus;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using LeakyReLUImpl = LeakyReLU;

}  // namespace nn
}  // namespace tg
