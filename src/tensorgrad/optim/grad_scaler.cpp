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
#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/prim/prim.h"
#include "tensorgrad/ops/ops.h"
#include "tensorgrad/optim/optimizer.h"
#include "tensorgrad/prim/cuda_graph.h"

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

// Note [GradScaler in CUDA graphs]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Eagerly the scaler decides on the host (Note [GradScaler synchronization]); a CUDA graph cannot
// read anything back, so inside a capture every decision moves to the device:
// - S and the growth tracker live in a float64 (2) tensor on the device (DeviceState::values, a
//   cuda::detail::graph_input, so no temporary of the graph shares its memory). Each capture that
//   uses the scaler adds a replay hook that writes the host's values there before a replay when the
//   host's are newer (the first replay, or eager iterations since the last replay); otherwise the
//   values the last replay's update() left stay. The first eager call after replays reads them back
//   once (pull_device_state), so eager and captured iterations can alternate.
// - scale(outputs) multiplies by float32(S) converted on the device; unscale_() by float32(1 / S)
//   taken in float64 on the device and rounded, PyTorch's reciprocal (and always: multiplying by 1
//   changes no bits, so the eager skip of that case needs no twin).
// - step() captures the optimizer's update so that each replay skips it on the device wherever the
//   summed inf/NaN flag is set (Optimizer::capture_step_unless_found, Note [Skipped captured steps]
//   in optim/optimizer.cpp): a skipped step leaves the parameters and the whole state, Adam's step
//   counts included, bit for bit as they were. SGD and capturable Adam/AdamW support it; optimizers
//   that compute their scalars on the host are refused.
// - update() applies torch._amp_update_scale_'s rule with where(): backoff, or growth after
//   growth_interval clean steps (kept when the float32 product is infinite), the products in float64
//   rounded to float32 and S kept at least the smallest normal float32, as the eager update does.
//   The factors and the interval are frozen into the graph as kernel arguments.
struct GradScaler::DeviceState {
  RawTensor values;            // float64 (2) on the device: S and the growth tracker
  float scale = 0;             // the host's values the next replay writes when host_newer
  int64_t tracker = 0;
  bool host_newer = true;      // else a replay left newer values on the device
};

bool GradScaler::capturing(Device device) { return device.is_cuda() && cuda::is_current_stream_capturing(); }

RawTensor GradScaler::device_values(Device device) {
  if (!device_) device_ = std::make_shared<DeviceState>();
  if (!device_->values.defined()) {
    device_->values = cuda::detail::graph_input(2, device.index());
    device_->scale = scale_;
    device_->tracker = growth_tracker_;
    device_->host_newer = true;
  }
  TG_CHECK(device_->values.device() == device, Error, "GradScaler: captured on ", device, " but its device state is on ",
           device_->values.device(), "; use one scaler per device in CUDA graphs");
  std::shared_ptr<DeviceState> d = device_;
  cuda::detail::add_replay_hook([d] {
    if (!d->host_newer) return;
    cuda::detail::write_graph_input(d->values, {static_cast<double>(d->scale), static_cast<double>(d->tracker)});
    d->host_newer = false;
  });
  return device_->values;
}

void GradScaler::pull_device_state() const {
  if (!device_ || device_->host_newer || capturing(device_->values.device())) return;
  const RawTensor host = device_->values.to(Device::cpu()).contiguous();   // the one synchronization
  const double* v = host.data<double>();
  auto* self = const_cast<GradScaler*>(this);
  self->set_scale(to_float(v[0]));
  self->growth_tracker_ = static_cast<int64_t>(v[1]);
  self->push_host_state();
}

void GradScaler::push_host_state() {
  if (!device_) return;
  device_->scale = scale_;
  device_->tracker = growth_tracker_;
  device_->host_newer = true;
}

RawTensor GradScaler::found_inf_on_device(const std::vector<RawTensor>& flags, const char* who) {
  const Device device = device_values(flags.front().device()).device();
  RawTensor found;
  for (const RawTensor& f : flags) {
    TG_CHECK(f.device() == device, Error, who, ": inside a CUDA graph capture of ", device, " a gradient is on ",
             f.device(), "; a capture holds the work of one device");
    found = found.defined() ? prim::add(found, f) : f;
  }
  return found;
}

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
  pull_device_state();
  return scaled_ ? static_cast<double>(scale_) : init_scale_;
}

int64_t GradScaler::get_growth_tracker() const {
  pull_device_state();
  return growth_tracker_;
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
    push_host_state();
  }
  if (capturing(outputs.device())) {   // Note [GradScaler in CUDA graphs]
    const RawTensor s = device_values(outputs.device()).narrow(0, 0, 1).reshape({}).to(kFloat32);
    return outputs * Tensor(s);
  }
  pull_device_state();
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

  // Inside a capture S is on the device (Note [GradScaler in CUDA graphs]): the reciprocal is taken
  // there, in float64 rounded to float32 as below.
  const bool on_device = !devices.empty() && capturing(devices.front());
  RawTensor inv_on_device;
  if (on_device) {
    const RawTensor s = device_values(devices.front()).narrow(0, 0, 1).reshape({});
    inv_on_device = prim::div(prim::scalar_like(1.0, s), s).to(kFloat32);
  } else {
    pull_device_state();
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
    if (!on_device && inv_scale == 1.0f) continue;
    TG_CHECK(!on_device || gr.device == devices.front(), Error, "unscale_: inside a CUDA graph capture of ",
             devices.front(), " a gradient is on ", gr.device, "; a capture holds the work of one device");
    const RawTensor inv = on_device ? inv_on_device.to(gr.dtype)
                                    : prim::full({}, static_cast<double>(inv_scale), gr.dtype, gr.device);
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
  if (capturing(st.found_inf.front().device())) {   // Note [GradScaler in CUDA graphs]
    optimizer.capture_step_unless_found(found_inf_on_device(st.found_inf, "step"));   // Note [Skipped captured steps]
    state_of(optimizer).stage = Stage::kStepped;
    return true;   // each replay decides on the device
  }
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
  std::vector<RawTensor> all;
  for (const OptimizerState& st : optimizers_) all.insert(all.end(), st.found_inf.begin(), st.found_inf.end());
  if (capturing(all.front().device())) {
    update_on_device(found_inf_on_device(all, "update"));
    optimizers_.clear();
    return;
  }
  pull_device_state();
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
  push_host_state();
  optimizers_.clear();
}

void GradScaler::update_on_device(const RawTensor& found) {
  NoGradGuard no_grad;
  const RawTensor values = device_values(found.device());
  const RawTensor s = values.narrow(0, 0, 1), tracker = values.narrow(0, 1, 1);
  auto lit = [&](double v) { return prim::scalar_like(v, s); };
  // float32(S * f) taken in float64, as the eager update and torch._amp_update_scale_.
  auto times = [&](double f) { return prim::mul(s, f).to(kFloat32).to(kFloat64); };
  const RawTensor inf = prim::binary(BinaryOp::Ne, found, prim::scalar_like(0.0, found), "update");
  const RawTensor successful = prim::add(tracker, lit(1.0));
  const RawTensor grow = prim::binary(BinaryOp::Ge, successful, lit(static_cast<double>(growth_interval_)), "update");
  const RawTensor grown = times(growth_factor_);
  const RawTensor finite = prim::binary(BinaryOp::Lt, prim::unary(UnaryOp::Abs, grown),
                                        lit(std::numeric_limits<double>::infinity()), "update");
  const RawTensor clean_scale = prim::where(grow, prim::where(finite, grown, s), s);
  const RawTensor clean_tracker = prim::where(grow, lit(0.0), successful);
  RawTensor next = prim::where(inf, times(backoff_factor_), clean_scale);
  const RawTensor smallest = lit(static_cast<double>(std::numeric_limits<float>::min()));
  next = prim::where(prim::binary(BinaryOp::Lt, next, smallest, "update"), smallest, next);
  const RawTensor next_tracker = prim::where(inf, lit(0.0), clean_tracker);
  prim::copy_(values, prim::cat({next, next_tracker}, 0));   // read above, written once
}

void GradScaler::update(double new_scale) {
  if (!enabled_) return;
  check_scaled("update");
  check_scale_value(new_scale, "update");
  const float s = to_float(new_scale);
  TG_CHECK(std::isfinite(s) && s > 0, Error, "update: new_scale ", new_scale, " is outside float32's range");
  // Inside a capture of the device that holds S, or of the one the gradients were checked on.
  std::vector<RawTensor> all;
  for (const OptimizerState& st : optimizers_) all.insert(all.end(), st.found_inf.begin(), st.found_inf.end());
  const bool on_device = device_ && device_->values.defined() && capturing(device_->values.device());
  if (on_device || (!all.empty() && capturing(all.front().device()))) {   // every replay sets S to new_scale
    const Device device = on_device ? device_->values.device() : all.front().device();
    prim::fill_(device_values(device).narrow(0, 0, 1), static_cast<double>(s));
    optimizers_.clear();
    return;
  }
  pull_device_state();
  set_scale(s);
  push_host_state();
  optimizers_.clear();
}

std::vector<std::pair<std::string, RawTensor>> GradScaler::state_dict() const {
  if (!enabled_) return {};
  pull_device_state();
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
  push_host_state();
}

}  // namespace amp

}  // namespace tg
