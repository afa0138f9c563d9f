// optim/grad_scaler.cpp: GradScaler (torch.amp.GradScaler's state machine and update rule); its
// tg::save / tg::load are io/checkpoint.cpp's. The inf/NaN check is composed from backend reductions and prim ops, so it runs
// unchanged on every device (Note [GradScaler synchronization] in optim/grad_scaler.h). The safetensors
// format itself is io/safetensors.cpp's.
#include "tensorgrad/optim/grad_scaler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "tensorgrad/backend/backend.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/optim/optimizer.h"

namespace tg {
namespace amp {

namespace {

void check_growth_factor(double f, const char* who) {
  TG_CHECK(f > 1.0, Error, who, ": The growth factor must be > 1.0, got ", f);
}
void check_backoff_factor(double f, const char* who) {
  TG_CHECK(f > 0.0 && f < 1.0, Error, who, ": The backoff factor must be < 1.0 (and > 0), got ", f);
}
void check_growth_interval(int64_t n, const char* who) {
  TG_CHECK(n >= 1, Error, who, ": the growth interval must be at least 1, got ", n);
}
void check_scale_value(double s, const char* who) {
  TG_CHECK(std::isfinite(s) && s > 0.0, Error, who, ": the scale must be positive and finite, got ", s);
}

/// float32(v): the scale is a float32 number, as PyTorch's float32 _scale tensor holds it. Values
/// beyond float32's range become inf (the callers keep such a scale out).
float to_float(double v) { return static_cast<float>(v); }

}  // namespace

GradScaler::GradScaler(GradScalerOptions options)
    : enabled_(options.enabled_),
      growth_factor_(options.growth_factor_),
      backoff_factor_(options.backoff_factor_),
      growth_interval_(options.growth_interval_),
      init_scale_(options.init_scale_) {
  if (!enabled_) return;   // PyTorch checks the factors of an enabled scaler only
  check_growth_factor(growth_factor_, "GradScaler");
  check_backoff_factor(backoff_factor_, "GradScaler");
  check_growth_interval(growth_interval_, "GradScaler");
  check_scale_value(init_scale_, "GradScaler");
  TG_CHECK(std::isfinite(to_float(init_scale_)) && to_float(init_scale_) > 0, Error,
           "GradScaler: init_scale ", init_scale_, " is outside float32's range");
}

void GradScaler::set_growth_factor(double f) {
  check_growth_factor(f, "set_growth_factor");
  growth_factor_ = f;
}

void GradScaler::set_backoff_factor(double f) {
  check_backoff_factor(f, "set_backoff_factor");
  backoff_factor_ = f;
}

void GradScaler::set_growth_interval(int64_t n) {
  check_growth_interval(n, "set_growth_interval");
  growth_interval_ = n;
}

double GradScaler::get_scale() const {
  if (!enabled_) return 1.0;
  return scaled_ ? static_cast<double>(scale_) : init_scale_;
}

void GradScaler::check_scaled(const char* what) const {
  TG_CHECK(scaled_, Error, what, ": Attempted ", what, " but _scale is None. This may indicate your script did not use "
           "scaler.scale(loss or outputs) earlier in the iteration.");
}

void GradScaler::set_scale(float s) {
  // The device copies are replaced rather than filled in place: a graph recorded by an earlier
  // scale() still holds the old copy as a saved tensor, and its backward must see the value it saved.
  if (s != scale_) scale_on_device_.clear();
  scale_ = s;
}

GradScaler::OptimizerState& GradScaler::state_of(const optim::Optimizer& optimizer) {
  for (OptimizerState& s : optimizers_)
    if (s.optimizer == &optimizer) return s;
  optimizers_.push_back(OptimizerState{});
  optimizers_.back().optimizer = &optimizer;
  return optimizers_.back();
}

Tensor GradScaler::scale(const Tensor& outputs) {
  if (!enabled_) return outputs;
  TG_CHECK(outputs.defined(), Error, "scale: the outputs are undefined");
  prim::check_floating("scale", outputs.data());
  if (!scaled_) {   // PyTorch creates its scale tensor here, from init_scale
    scale_ = to_float(init_scale_);
    scaled_ = true;
  }
  // The 0-d float32 copy of S on the outputs' device, made once per device and value of S (set_scale
  // drops the copies of an older value): a fill, never a read back. A float16 or bfloat16 loss times
  // it is float32 (Note [Type promotion]), as in PyTorch, so 65536 never overflows float16.
  const Device device = outputs.device();
  const DType dtype = kFloat32;
  auto it = std::find_if(scale_on_device_.begin(), scale_on_device_.end(),
                         [&](const RawTensor& t) { return t.device() == device && t.dtype() == dtype; });
  if (it == scale_on_device_.end()) {
    scale_on_device_.push_back(prim::full({}, scale_, dtype, device));
    it = scale_on_device_.end() - 1;
  }
  return outputs * Tensor(*it);
}

std::vector<Tensor> GradScaler::scale(const std::vector<Tensor>& outputs) {
  std::vector<Tensor> out;
  out.reserve(outputs.size());
  for (const Tensor& o : outputs) out.push_back(scale(o));
  return out;
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!enabled_) return;
  check_scaled("unscale_");
  OptimizerState& st = state_of(optimizer);
  TG_CHECK(st.stage != Stage::kUnscaled, Error,
           "unscale_() has already been called on this optimizer since the last update().");
  TG_CHECK(st.stage != Stage::kStepped, Error, "unscale_() is being called after step().");

  // The gradients, grouped by (device, dtype) as PyTorch groups them for its fused kernel. Everything
  // is checked before any gradient is touched.
  struct Group {
    Device device;
    DType dtype;
    std::vector<Tensor> params;
  };
  std::vector<Group> groups;
  std::vector<Device> devices;   // every device with a gradient, in first-seen order
  for (const Tensor& p : optimizer.params()) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    TG_CHECK(is_floating(g.dtype()), DTypeError, "unscale_: expected floating-point gradients, got ",
             dtype_name(g.dtype()));
    // PyTorch refuses too: the unscaled float16 values would underflow. Keep float32 parameters under
    // autocast (their gradients are float32), or train in bfloat16.
    TG_CHECK(g.dtype() != kFloat16, DTypeError, "unscale_: Attempting to unscale FP16 gradients.");
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& gr) { return gr.device == g.device() && gr.dtype == g.dtype(); });
    if (it == groups.end()) it = groups.insert(groups.end(), Group{g.device(), g.dtype(), {}});
    it->params.push_back(p);
    if (std::find(devices.begin(), devices.end(), g.device()) == devices.end()) devices.push_back(g.device());
  }

  // PyTorch takes the reciprocal in float64 and rounds it to float32 (float32 division can be
  // imprecise under some compile options); every gradient is multiplied by that float32 value.
  const float inv_scale = to_float(1.0 / static_cast<double>(scale_));
  NoGradGuard no_grad;
  std::vector<RawTensor> found(devices.size());   // 0-d float32 per device, in `devices` order
  for (const Group& gr : groups) {
    // extrema (2 n): the max and the min of each non-empty gradient, written by the backend's reduction
    // straight into their slots. A gradient holds an inf or a NaN exactly when its max or min does (NaN
    // wins max and min: Note [NaN and infinity] in kernels/elementwise.h), and sum(extrema * 0) is then NaN,
    // else 0: no comparison and no overflow, whatever the magnitudes.
    std::vector<RawTensor> grads;
    for (const Tensor& p : gr.params)
      if (p.grad().numel() > 0) grads.push_back(p.grad().data());
    RawTensor flag;
    if (!grads.empty()) {
      const RawTensor extrema = prim::empty({2 * static_cast<int64_t>(grads.size())}, gr.dtype, gr.device);
      Backend& backend = backend_for(gr.device);
      for (std::size_t i = 0; i < grads.size(); ++i) {
        const RawTensor x = grads[i].dim() == 0 ? grads[i].reshape({1}) : grads[i];
        const Shape ones(static_cast<std::size_t>(x.dim()), 1);
        backend.reduce(ReduceOp::Max, x, extrema.narrow(0, 2 * static_cast<int64_t>(i), 1).view(ones));   // sets
        backend.reduce(ReduceOp::Min, x, extrema.narrow(0, 2 * static_cast<int64_t>(i) + 1, 1).view(ones));   // sets
      }
      flag = prim::sum(prim::mul(extrema, 0.0)).to(kFloat32);
    } else {
      flag = prim::full({}, 0.0, kFloat32, gr.device);   // only empty gradients: nothing can be inf
    }
    const std::size_t d = static_cast<std::size_t>(std::find(devices.begin(), devices.end(), gr.device) - devices.begin());
    found[d] = found[d].defined() ? prim::add(found[d], flag) : flag;

    // Unscale in place, after the check read the values (PyTorch checks the gradients as they were).
    // Multiplying by 1 would change nothing: PyTorch skips it, so does this.
    if (inv_scale == 1.0f) continue;
    const RawTensor inv = prim::full({}, static_cast<double>(inv_scale), gr.dtype, gr.device);
    for (const Tensor& p : gr.params) {
      const RawTensor g = p.grad().data();
      if (g.numel() == 0) continue;
      if (prim::has_internal_overlap(g)) {
        // a gradient the user set to an expanded view: an in-place product would write one element
        // several times (Note [Overlapping writes]); it gets the product as a fresh tensor instead
        Tensor(p).set_grad(Tensor(prim::mul(g, inv)));
      } else {
        prim::binary_(BinaryOp::Mul, g, inv, "unscale_");   // sets g = g * inv
      }
    }
  }
  st.found_inf = std::move(found);
  st.found_read = false;
  st.stage = Stage::kUnscaled;
}

bool GradScaler::read_found_inf(const std::vector<RawTensor>& flags) {
  // One sum per device, then one read each: the only host synchronization of the scaler.
  std::vector<RawTensor> per_device;
  for (const RawTensor& f : flags) {
    auto it = std::find_if(per_device.begin(), per_device.end(), [&](const RawTensor& t) { return t.device() == f.device(); });
    if (it == per_device.end()) per_device.push_back(f);
    else *it = prim::add(*it, f);
  }
  bool any = false;
  for (const RawTensor& t : per_device) any = t.item() != 0.0 || any;   // NaN != 0: found
  return any;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  check_scaled("step");
  TG_CHECK(state_of(optimizer).stage != Stage::kStepped, Error,
           "step() has already been called since the last update().");
  if (state_of(optimizer).stage == Stage::kReady) unscale_(optimizer);
  OptimizerState& st = state_of(optimizer);   // after unscale_: optimizers_ may have grown
  TG_CHECK(!st.found_inf.empty(), Error, "step: No inf checks were recorded for this optimizer. None of its "
           "parameters has a gradient.");
  if (!st.found_read) {
    st.any_inf = read_found_inf(st.found_inf);
    st.found_read = true;
  }
  const bool run = !st.any_inf;
  if (run) optimizer.step();
  st.stage = Stage::kStepped;
  return run;
}

void GradScaler::update() {
  if (!enabled_) return;
  check_scaled("update");
  bool any_inf = false, recorded = false;
  std::vector<RawTensor> unread;
  for (const OptimizerState& st : optimizers_) {
    if (st.found_inf.empty()) continue;
    recorded = true;
    if (st.found_read) any_inf = any_inf || st.any_inf;
    else unread.insert(unread.end(), st.found_inf.begin(), st.found_inf.end());
  }
  TG_CHECK(recorded, Error, "update: No inf checks were recorded prior to update.");
  if (!any_inf && !unread.empty()) any_inf = read_found_inf(unread);

  // torch._amp_update_scale_: the products are taken in float64 and stored as float32.
  float next = scale_;
  if (any_inf) {
    next = to_float(static_cast<double>(scale_) * backoff_factor_);
    growth_tracker_ = 0;
  } else {
    const int64_t successful = growth_tracker_ + 1;   // this step was clean
    // >= rather than PyTorch's ==: a tracker past the interval (set_growth_interval lowered it, or a
    // loaded state) grows at once instead of never again.
    if (successful >= growth_interval_) {
      const float grown = to_float(static_cast<double>(scale_) * growth_factor_);
      if (std::isfinite(grown)) next = grown;   // never grow past float32's range to inf
      growth_tracker_ = 0;
    } else {
      growth_tracker_ = successful;
    }
  }
  // S stays a normal float32: ~150 backoffs in a row would round it to 0 (PyTorch's would), and the
  // reciprocal of 0, or of a subnormal, is inf, which would turn every later gradient into NaN.
  set_scale(std::max(next, std::numeric_limits<float>::min()));
  optimizers_.clear();
}

void GradScaler::update(double new_scale) {
  if (!enabled_) return;
  check_scaled("update");
  check_scale_value(new_scale, "update");
  const float s = to_float(new_scale);
  TG_CHECK(std::isfinite(s) && s > 0, Error, "update: new_scale ", new_scale, " is outside float32's range");
  set_scale(s);
  optimizers_.clear();
}

std::vector<std::pair<std::string, RawTensor>> GradScaler::state_dict() const {
  if (!enabled_) return {};
  const Device cpu = Device::cpu();
  return {
      {"scale", prim::full({}, get_scale(), kFloat64, cpu)},
      {"growth_factor", prim::full({}, growth_factor_, kFloat64, cpu)},
      {"backoff_factor", prim::full({}, backoff_factor_, kFloat64, cpu)},
      {"growth_interval", prim::full({}, static_cast<double>(growth_interval_), kInt64, cpu)},
      {"_growth_tracker", prim::full({}, static_cast<double>(growth_tracker_), kInt64, cpu)},
  };
}

void GradScaler::load_state_dict(const std::vector<std::pair<std::string, RawTensor>>& state) {
  if (!enabled_) return;
  TG_CHECK(!state.empty(), Error, "load_state_dict: The source state dict is empty, possibly because it was saved "
           "from a disabled instance of GradScaler.");
  const char* const keys[] = {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"};
  std::map<std::string, double> values;
  std::map<std::string, int64_t> ints;   // the integer entries, read exactly
  for (const auto& [name, t] : state) {
    TG_CHECK(std::find(std::begin(keys), std::end(keys), name) != std::end(keys), Error,
             "load_state_dict: unexpected key \"", name, "\" in the GradScaler state");
    TG_CHECK(!values.count(name), Error, "load_state_dict: key \"", name, "\" appears twice");
    TG_CHECK(t.defined() && t.numel() == 1, Error, "load_state_dict: \"", name, "\" must hold one number, got shape ",
             t.defined() ? shape_str(t.shape()) : std::string("(undefined)"));
    const bool integral = name == "growth_interval" || name == "_growth_tracker";
    TG_CHECK(integral ? t.dtype() == kInt64 : is_floating(t.dtype()), DTypeError, "load_state_dict: \"", name,
             "\" must be ", integral ? "an int64 integer" : "floating-point", ", got ", dtype_name(t.dtype()));
    values[name] = t.item();
    if (integral) ints[name] = t.to(Device::cpu()).contiguous().data<int64_t>()[0];
  }
  for (const char* k : keys)
    TG_CHECK(values.count(k), Error, "load_state_dict: key \"", k, "\" is missing from the GradScaler state");
  const double scale = values["scale"];
  check_scale_value(scale, "load_state_dict");
  TG_CHECK(std::isfinite(to_float(scale)) && to_float(scale) > 0, Error, "load_state_dict: scale ", scale,
           " is outside float32's range");
  check_growth_factor(values["growth_factor"], "load_state_dict");
  check_backoff_factor(values["backoff_factor"], "load_state_dict");
  check_growth_interval(ints["growth_interval"], "load_state_dict");
  TG_CHECK(ints["_growth_tracker"] >= 0, Error, "load_state_dict: _growth_tracker must be >= 0, got ",
           ints["_growth_tracker"]);

  // Everything fits: PyTorch's order of assignments.
  init_scale_ = scale;
  if (scaled_) set_scale(to_float(scale));
  growth_factor_ = values["growth_factor"];
  backoff_factor_ = values["backoff_factor"];
  growth_interval_ = ints["growth_interval"];
  growth_tracker_ = ints["_growth_tracker"];
}

}  // namespace amp

}  // namespace tg
