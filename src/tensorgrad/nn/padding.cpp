// nn/padding.cpp: the constructors' checks, forward and printing of nn/padding.h's layers.
#include "tensorgrad/nn/padding.h"

#include <sstream>

namespace tg {
namespace nn {

PadLayer::PadLayer(const char* kind, int dims, std::string mode, IntArrayRef padding, double value)
    : kind_(kind), dims_(dims), mode_(std::move(mode)), value_(value) {
  const std::size_t n = static_cast<std::size_t>(2 * dims);
  TG_CHECK(padding.size() == 1 || padding.size() == n, ShapeError, kind, ": padding must be one number or ", n,
           " numbers, got ", shape_str(padding));
  padding_ = padding.size() == 1 ? std::vector<int64_t>(n, padding[0]) : std::vector<int64_t>(padding);
}

Tensor PadLayer::forward(const Tensor& x) {
  if (mode_ == "constant") {
    TG_CHECK(x.dim() >= dims_, ShapeError, kind_, ": expected an input of at least ", dims_, " dims, got input of size ",
             shape_str(x.shape()));
    return pad(x, padding_, mode_, value_);
  }
  // reflection and replication: (C, spatial...) or (N, C, spatial...)
  TG_CHECK(x.dim() == dims_ + 1 || x.dim() == dims_ + 2, ShapeError, kind_, ": expected ", dims_ + 1, "D or ",
           dims_ + 2, "D input (got ", x.dim(), "D input of size ", shape_str(x.shape()), ")");
  return pad(x, padding_, mode_);
}

std::string PadLayer::name() const {
  std::ostringstream os;
  os << kind_ << "(";
  const bool constant = std::string(kind_).rfind("ConstantPad", 0) == 0;
  if (constant) os << "padding=";
  os << "(";
  for (std::size_t i = 0; i < padding_.size(); ++i) os << (i ? ", " : "") << padding_[i];
  os << ")";
  if (constant) os << ", value=" << value_;
  os << ")";
  return os.str();
}

}  // namespace nn
}  // namespace tg
