// nn/init.cpp: torch.nn.init formulas. Values are drawn on the CPU stream's counters and copied
// into the parameter in place (its handle, device and dtype stay), under NoGradGuard.
#include "tensorgrad/nn/init.h"

#include <cmath>

#include "tensorgrad/kernels/philox.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace nn {
namespace init {

namespace {
thread_local int t_skip_init = 0;

Tensor& fill_random(Tensor& v, const philox::Distribution& dist) {
  TG_CHECK(v.defined(), Error, "init: the Tensor is undefined");
  prim::check_floating("init", v.data());
  if (SkipInitGuard::is_enabled()) return v;
  NoGradGuard no_grad;
  prim::copy_(v.data(), prim::random(dist, v.shape(), v.dtype(), v.device()));
  return v;
}
}  // namespace

std::pair<int64_t, int64_t> fan_in_and_out(const Tensor& v) {
  TG_CHECK(v.dim() >= 2, ShapeError, "init: fan in and fan out can not be computed for a tensor with fewer than 2 ",
           "dimensions (shape ", shape_str(v.shape()), ")");
  int64_t receptive = 1;
  for (int64_t d = 2; d < v.dim(); ++d) receptive *= v.shape()[d];
  return {v.shape()[1] * receptive, v.shape()[0] * receptive};
}

Tensor& uniform_(Tensor& v, double a, double b) {
  TG_CHECK(std::isfinite(a) && std::isfinite(b) && a <= b, Error,
           "uniform_ expects to return a [from, to) range, but found from=", a, " > to=", b);
  return fill_random(v, philox::Distribution::uniform(a, b));
}
Tensor& normal_(Tensor& v, double mean, double std) {
  TG_CHECK(std::isfinite(mean) && std::isfinite(std) && std >= 0, Error,
           "normal_ expects a finite mean and std >= 0.0, but found mean ", mean, " and std ", std);
  return fill_random(v, philox::Distribution::normal(mean, std));
}

SkipInitGuard::SkipInitGuard() { ++t_skip_init; }
SkipInitGuard::~SkipInitGuard() { --t_skip_init; }
bool SkipInitGuard::is_enabled() { return t_skip_init > 0; }

Tensor& constant_(Tensor& v, double value) {
  TG_CHECK(v.defined(), Error, "init: the Tensor is undefined");
  if (SkipInitGuard::is_enabled()) return v;
  NoGradGuard no_grad;
  prim::fill_(v.data(), value);
  return v;
}
Tensor& zeros_(Tensor& v) { return constant_(v, 0); }
Tensor& ones_(Tensor& v) { return constant_(v, 1); }

Tensor& kaiming_uniform_(Tensor& v, double a) {
  const double gain = std::sqrt(2.0 / (1 + a * a));
  const double bound = gain * std::sqrt(3.0 / static_cast<double>(fan_in_and_out(v).first));
  return uniform_(v, -bound, bound);
}

Tensor& kaiming_normal_(Tensor& v, double a) {
  const double gain = std::sqrt(2.0 / (1 + a * a));
  return normal_(v, 0, gain / std::sqrt(static_cast<double>(fan_in_and_out(v).first)));
}

Tensor& xavier_uniform_(Tensor& v, double gain) {
  const auto [in, out] = fan_in_and_out(v);
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(in + out));
  return uniform_(v, -bound, bound);
}

Tensor& xavier_normal_(Tensor& v, double gain) {
  const auto [in, out] = fan_in_and_out(v);
  return normal_(v, 0, gain * std::sqrt(2.0 / static_cast<double>(in + out)));
}

}  // namespace init
}  // namespace nn
}  // namespace tg
