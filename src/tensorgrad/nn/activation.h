/// \file
/// nn/activation.h: the activation modules GELU, SiLU, Softplus, LeakyReLU, PReLU, ELU, CELU, SELU, Hardtanh,
/// ReLU6, Hardswish, Hardsigmoid, Mish, Softsign, Softmax, LogSoftmax and Identity with PyTorch's options
/// and reprs, each forward one call into ops/ops.h. ReLU, Sigmoid and Tanh are in nn/layers.h; the math
/// is in kernels/elementwise.h.
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

/// selu(x) as a module (torch::nn::SELU).
class SELU : public Module {
 public:
  /// selu(x), any shape.
  Tensor forward(const Tensor& x) override { return selu(x); }
  /// "SELU()".
  std::string name() const override { return "SELU()"; }
  /// A new one (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<SELU>(); }
  TG_LAYER_HANDLE_DEFAULT(SELU)
};

/// relu6(x) as a module (torch::nn::ReLU6).
class ReLU6 : public Module {
 public:
  /// relu6(x), any shape.
  Tensor forward(const Tensor& x) override { return relu6(x); }
  /// "ReLU6()".
  std::string name() const override { return "ReLU6()"; }
  /// A new one (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<ReLU6>(); }
  TG_LAYER_HANDLE_DEFAULT(ReLU6)
};

/// hardswish(x) as a module (torch::nn::Hardswish).
class Hardswish : public Module {
 public:
  /// hardswish(x), any shape.
  Tensor forward(const Tensor& x) override { return hardswish(x); }
  /// "Hardswish()".
  std::string name() const override { return "Hardswish()"; }
  /// A new one (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Hardswish>(); }
  TG_LAYER_HANDLE_DEFAULT(Hardswish)
};

/// hardsigmoid(x) as a module (torch::nn::Hardsigmoid).
class Hardsigmoid : public Module {
 public:
  /// hardsigmoid(x), any shape.
  Tensor forward(const Tensor& x) override { return hardsigmoid(x); }
  /// "Hardsigmoid()".
  std::string name() const override { return "Hardsigmoid()"; }
  /// A new one (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Hardsigmoid>(); }
  TG_LAYER_HANDLE_DEFAULT(Hardsigmoid)
};

/// mish(x) as a module (torch::nn::Mish).
class Mish : public Module {
 public:
  /// mish(x), any shape.
  Tensor forward(const Tensor& x) override { return mish(x); }
  /// "Mish()".
  std::string name() const override { return "Mish()"; }
  /// A new one (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Mish>(); }
  TG_LAYER_HANDLE_DEFAULT(Mish)
};

/// softsign(x) as a module (torch::nn::Softsign).
class Softsign : public Module {
 public:
  /// softsign(x), any shape.
  Tensor forward(const Tensor& x) override { return softsign(x); }
  /// "Softsign()".
  std::string name() const override { return "Softsign()"; }
  /// A new one (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Softsign>(); }
  TG_LAYER_HANDLE_DEFAULT(Softsign)
};

/// Its input, unchanged (torch::nn::Identity): a placeholder where a model's layer is optional.
class Identity : public Module {
 public:
  /// x itself.
  Tensor forward(const Tensor& x) override { return x; }
  /// "Identity()".
  std::string name() const override { return "Identity()"; }
  /// A new one (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Identity>(); }
  TG_LAYER_HANDLE_DEFAULT(Identity)
};

/// elu(x, alpha) as a module (torch::nn::ELU); prints "ELU(alpha=1.0)".
class ELU : public Module {
 public:
  /// The saturation value for x < 0 is -alpha.
  explicit ELU(double alpha = 1.0) : alpha_(alpha) {}
  /// elu(x, alpha), any shape.
  Tensor forward(const Tensor& x) override { return elu(x, alpha_); }
  /// "ELU(alpha=1.0)".
  std::string name() const override { return "ELU(alpha=" + detail::python_float(alpha_) + ")"; }
  /// An ELU with the same alpha (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<ELU>(alpha_); }
 private:
  double alpha_;
  TG_LAYER_HANDLE(ELU)
};

/// celu(x, alpha) as a module (torch::nn::CELU); prints "CELU(alpha=1.0)".
class CELU : public Module {
 public:
  /// alpha of max(0, x) + min(0, alpha (e^(x / alpha) - 1)); celu raises for alpha 0.
  explicit CELU(double alpha = 1.0) : alpha_(alpha) {}
  /// celu(x, alpha), any shape.
  Tensor forward(const Tensor& x) override { return celu(x, alpha_); }
  /// "CELU(alpha=1.0)".
  std::string name() const override { return "CELU(alpha=" + detail::python_float(alpha_) + ")"; }
  /// A CELU with the same alpha (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<CELU>(alpha_); }
 private:
  double alpha_;
  TG_LAYER_HANDLE(CELU)
};

/// hardtanh(x, min_val, max_val) as a module (torch::nn::Hardtanh); prints
/// "Hardtanh(min_val=-1.0, max_val=1.0)".
class Hardtanh : public Module {
 public:
  /// The clamp range; Error when max_val <= min_val, as PyTorch's constructor asserts.
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0) : min_val_(min_val), max_val_(max_val) {
    TG_CHECK(max_val > min_val, Error, "Hardtanh: max_val must be greater than min_val, got min_val ",
             detail::python_float(min_val), " and max_val ", detail::python_float(max_val));
  }
  /// hardtanh(x, min_val, max_val), any shape.
  Tensor forward(const Tensor& x) override { return hardtanh(x, min_val_, max_val_); }
  /// "Hardtanh(min_val=-1.0, max_val=1.0)".
  std::string name() const override {
    return "Hardtanh(min_val=" + detail::python_float(min_val_) + ", max_val=" + detail::python_float(max_val_) + ")";
  }
  /// A Hardtanh with the same range (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Hardtanh>(min_val_, max_val_); }
 private:
  double min_val_, max_val_;
  TG_LAYER_HANDLE(Hardtanh)
};

/// softmax(x, dim) as a module (torch::nn::Softmax); prints "Softmax(dim=1)".
class Softmax : public Module {
 public:
  /// The dim the probabilities sum to 1 along (negative: from the end).
  explicit Softmax(int64_t dim) : dim_(dim) {}
  /// softmax(x, dim).
  Tensor forward(const Tensor& x) override { return softmax(x, dim_); }
  /// "Softmax(dim=1)".
  std::string name() const override { return "Softmax(dim=" + std::to_string(dim_) + ")"; }
  /// A Softmax over the same dim (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<Softmax>(dim_); }
 private:
  int64_t dim_;
  TG_LAYER_HANDLE(Softmax)
};

/// log_softmax(x, dim) as a module (torch::nn::LogSoftmax); prints "LogSoftmax(dim=1)".
class LogSoftmax : public Module {
 public:
  /// The dim normalized along (negative: from the end).
  explicit LogSoftmax(int64_t dim) : dim_(dim) {}
  /// log_softmax(x, dim).
  Tensor forward(const Tensor& x) override { return log_softmax(x, dim_); }
  /// "LogSoftmax(dim=1)".
  std::string name() const override { return "LogSoftmax(dim=" + std::to_string(dim_) + ")"; }
  /// A LogSoftmax over the same dim (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<LogSoftmax>(dim_); }
 private:
  int64_t dim_;
  TG_LAYER_HANDLE(LogSoftmax)
};

/// Options of PReLU (torch::nn::PReLUOptions): PReLUOptions().num_parameters(3).init(0.1).
struct PReLUOptions {
  /// The learned slopes: 1 (shared by every channel, the default) or the input's channels.
  PReLUOptions& num_parameters(int64_t n) { num_parameters_ = n; return *this; }
  /// The slopes' initial value (default 0.25).
  PReLUOptions& init(double v) { init_ = v; return *this; }
  /// See num_parameters().
  int64_t num_parameters_ = 1;
  /// See init().
  double init_ = 0.25;
};

/// prelu(x, weight) as a module (torch::nn::PReLU): x where x > 0, weight * x elsewhere, with weight
/// (num_parameters) learned, filled with init; one slope per channel (dim 1) when num_parameters > 1.
class PReLU : public Module {
 public:
  /// Error unless num_parameters > 0.
  explicit PReLU(const PReLUOptions& options = {});
  /// prelu(x, weight): x of any shape with dim 1 of num_parameters when that is more than 1.
  Tensor forward(const Tensor& x) override { return prelu(x, weight); }
  /// "PReLU(num_parameters=1)".
  std::string name() const override { return "PReLU(num_parameters=" + std::to_string(options_.num_parameters_) + ")"; }
  /// A PReLU of the same options, its weight freshly filled with init (for clone()).
  std::unique_ptr<Module> new_instance() const override { return std::make_unique<PReLU>(options_); }
  Tensor weight;   ///< (num_parameters), registered as "weight"
 private:
  PReLUOptions options_;
  TG_LAYER_HANDLE(PReLU)
};

/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using GELUImpl = GELU;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using SiLUImpl = SiLU;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using SoftplusImpl = Softplus;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using LeakyReLUImpl = LeakyReLU;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using ELUImpl = ELU;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using CELUImpl = CELU;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using HardtanhImpl = Hardtanh;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using SoftmaxImpl = Softmax;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using LogSoftmaxImpl = LogSoftmax;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using IdentityImpl = Identity;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using SELUImpl = SELU;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using ReLU6Impl = ReLU6;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using HardswishImpl = Hardswish;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using HardsigmoidImpl = Hardsigmoid;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using MishImpl = Mish;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using SoftsignImpl = Softsign;
/// libtorch's name of the module type, which is its own holder (Note [Value modules and handles], nn/pimpl.h).
using PReLUImpl = PReLU;

}  // namespace nn
}  // namespace tg
