// nn/activation.cpp: the constructors' checks and the printed names of the activation modules of
// nn/activation.h. Their forward calls are inline in the header.
#include "tensorgrad/nn/activation.h"

#include <cmath>
#include <sstream>

#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace nn {

GELU::GELU(std::string approximate) : approximate_(std::move(approximate)) {
  TG_CHECK(approximate_ == "none" || approximate_ == "tanh", Error, "GELU: approximate must be \"none\" or \"tanh\", got \"",
           approximate_, "\"");
}

Softplus::Softplus(double beta, double threshold) : beta_(beta), threshold_(threshold) {
  TG_CHECK(beta != 0 && !std::isnan(beta), Error, "Softplus: beta must be a non-zero number, got ", beta);
}

std::string Softplus::name() const {
  std::ostringstream os;   // default formatting: "beta=1, threshold=20", as PyTorch prints the defaults
  os << "Softplus(beta=" << beta_ << ", threshold=" << threshold_ << ")";
  return os.str();
}

std::string LeakyReLU::name() const {
  std::ostringstream os;
  os << "LeakyReLU(negative_slope=" << negative_slope_ << ")";
  return os.str();
}

PReLU::PReLU(const PReLUOptions& options) : options_(options) {
  TG_CHECK(options.num_parameters_ > 0, Error, "PReLU: num_parameters must be positive, got ", options.num_parameters_);
  weight = Tensor(prim::full({options.num_parameters_}, options.init_));
  register_parameter("weight", weight);
}

}  // namespace nn
}  // namespace tg
