// optim/adam.cpp: Adam/AdamW steps. Every parameter is validated before any is updated, so a step
// completes for all parameters or changes none. Kernel: Backend::adam_step, one call per (device,
// dtype) over that group's parameters.
#include "tensorgrad/optim/adam.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "tensorgrad/core/error.h"
#include "tensorgrad/kernels/optim.h"
#include "tensorgrad/prim/cuda_graph.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace optim {

namespace {
/// Whether a group with options o can share the fused call of hyperparameters h (the learning rate
/// and amsgrad travel with each parameter).
bool same_hyper(const AdamOptions& o, const AdamHyper& h) {
  return o.beta1_ == h.beta1 && o.beta2_ == h.beta2 && o.eps_ == h.eps && o.weight_decay_ == h.weight_decay;
}

/// Updates params[r] (of a group with options *options[r]) by prim::adam_step, one call per run of
/// consecutive parameters whose groups share their hyperparameters (same_hyper), and returns each
/// parameter's. prim::adam_step groups a call's parameters by (device, dtype): one launch per 24 on CUDA.
std::vector<AdamHyper> step_in_runs(const std::vector<AdamParam>& params,
                                    const std::vector<const AdamOptions*>& options, bool decoupled) {
  std::vector<AdamHyper> hypers;
  hypers.reserve(params.size());
  std::vector<AdamParam> run;
  AdamHyper hyper;
  hyper.decoupled = decoupled;
  for (std::size_t r = 0; r < params.size(); ++r) {
    const AdamOptions& o = *options[r];
    if (!same_hyper(o, hyper)) {
      if (!run.empty()) prim::adam_step(run, hyper);
      run.clear();
      hyper = AdamHyper{o.beta1_, o.beta2_, o.eps_, o.weight_decay_, decoupled};
    }
    hypers.push_back(hyper);
    run.push_back(params[r]);
  }
  if (!run.empty()) prim::adam_step(run, hyper);
  return hypers;
}
}  // namespace

Adam::Adam(std::vector<Tensor> params, AdamOptions options)
    : Adam(std::vector<ParamGroup>{ParamGroup{std::move(params), std::nullopt}}, options, false) {}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions options) : Adam(std::move(groups), options, false) {}

void AdamOptions::check(const std::string& who) const {
  TG_CHECK(eps_ >= 0, Error, who, ": invalid epsilon ", eps_);
  TG_CHECK(beta1_ >= 0 && beta1_ < 1 && beta2_ >= 0 && beta2_ < 1, Error, who, ": invalid betas (", beta1_, ", ",
           beta2_, "): each must be in [0, 1)");
  TG_CHECK(weight_decay_ >= 0, Error, who, ": invalid weight_decay ", weight_decay_);
}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions options, bool decoupled)
    : Optimizer(std::move(groups), options, decoupled ? "AdamW" : "Adam"), decoupled_(decoupled) {
  state_.resize(params_.size());
}

// Note [Captured Adam]
// ~~~~~~~~~~~~~~~~~~~~
// A step captured into a CUDA graph replays its kernels with the arguments they were captured with,
// but Adam's per-step values (lr / bc1, 1 / sqrt(bc2), 1 - lr wd) change with every step and with a
// scheduler's lr. With capturable(true), a step inside a capture does not count as a step: its
// updates read those values from a float64 (n, 3) tensor on the device (AdamParam::scalars), and the
// graph gets a replay hook that, before each replay, advances the parameters' step counts on the
// host and writes the values of that step and the groups' current lr there. So the host keeps the
// same step counts and computes the same doubles as eager steps, and N replays give the bits of N
// eager steps. The tensor lives in a block no temporary of the graph shares (cuda::detail::
// graph_input: a replay rewrites its temporaries, and one at the same address would overwrite the
// values before Adam reads them); the values travel as kernel arguments (write_graph_input), so a
// replay queues one small launch before the graph and the host never waits. The state must exist
// before the capture (a warm-up step): creating it inside would zero it at every replay. The hook
// holds the CapturedStep; the optimizer's destructor marks it gone, and a replay after that raises.
//
// Under a captured GradScaler (capture_step_unless_found) a replay may skip the step, which the
// host cannot know without reading the flag back, so it cannot count the steps: the step counts of
// the captured parameters move to the device (CapturedStep::steps, float64, a graph_input). Each
// replay computes t = steps + 1 and the step values from it on the device, adam_step_values's
// float64 operations in its order (1 - beta^t, lr / bc1, 1 / sqrt(bc2)), with lr, the decay
// factor and the betas written by the hook, and stores where(found, steps, t) back, so a skipped
// step leaves the count as PyTorch's fused step with found_inf does (Note [Skipped captured
// steps] in optim/optimizer.cpp undoes the rest). The hook writes the host's counts there first
// when they are newer (the first replay, or eager steps since); after replays, the first host use
// of the counts (step(), state(), set_state(), another graph's replay) reads them back once
// (pull_steps), so eager steps and replays can alternate. On the emulator the device's pow is the
// host's and the replays give the eager bits; on a GPU the division and square root are correctly
// rounded but CUDA's float64 pow is within 2 ulp, so a bias correction may differ from the host's
// in its last bits: float32 parameters round those away except in the rarest cases, float64
// parameters can differ in their last bits.
struct Adam::CapturedStep {
  Adam* owner;                        // null once the optimizer is destroyed
  RawTensor values;                   // (n, 3) float64 on the device: AdamStepValues per parameter
  std::vector<std::size_t> params;    // the captured parameters' indices
  std::vector<AdamHyper> hyper;       // and their groups' hyperparameters
  RawTensor steps;                    // skippable only: (n) float64, the step counts on the device
  RawTensor inputs;                   // skippable only: (n, 4) float64, lr, decay, beta1, beta2 per parameter
};

namespace {
/// Inside a capture: the AdamStepValues rows (n, 3) of the steps t (float64 (n, 1)) from inputs (n,
/// 4: lr, decay, beta1, beta2), computed as adam_step_values computes them on the host.
RawTensor step_values_on_device(const RawTensor& inputs, const RawTensor& t) {
  auto column = [&](int64_t j) { return inputs.narrow(1, j, 1); };
  const RawTensor one = prim::scalar_like(1.0, t);
  const RawTensor bc1 = prim::sub(one, prim::binary(BinaryOp::Pow, column(2), t, "Adam"));
  const RawTensor bc2 = prim::sub(one, prim::binary(BinaryOp::Pow, column(3), t, "Adam"));
  const RawTensor step_size = prim::div(column(0), bc1);
  const RawTensor inv_sqrt_bc2 = prim::div(one, prim::unary(UnaryOp::Sqrt, bc2));
  return prim::cat({step_size, inv_sqrt_bc2, column(1)}, 1);
}
}  // namespace

Adam::~Adam() {
  for (const auto& weak : captured_)
    if (auto c = weak.lock()) c->owner = nullptr;
}

void Adam::write_step_values(const std::shared_ptr<CapturedStep>& c) {
  if (c->steps.defined()) {   // the step counts advance on the device
    if (device_steps_ != c) {   // the host's counts are newer: the device starts from them
      pull_steps();
      std::vector<double> steps;
      for (std::size_t i : c->params) steps.push_back(static_cast<double>(state_[i].step));
      cuda::detail::write_graph_input(c->steps, steps);
      device_steps_ = c;
    }
    std::vector<double> inputs;
    for (std::size_t r = 0; r < c->params.size(); ++r) {
      const double lr = lr_of(c->params[r]);
      const AdamHyper& h = c->hyper[r];
      inputs.insert(inputs.end(), {lr, adam_step_values(h, lr, 1).decay, h.beta1, h.beta2});   // decay: any step's
    }
    cuda::detail::write_graph_input(c->inputs, inputs);
    return;
  }
  pull_steps();
  std::vector<double> values(3 * c->params.size());
  for (std::size_t r = 0; r < c->params.size(); ++r) {
    State& s = state_[c->params[r]];
    if (s.step < std::numeric_limits<int64_t>::max()) ++s.step;
    const AdamStepValues v = adam_step_values(c->hyper[r], lr_of(c->params[r]), s.step);
    values[3 * r] = v.step_size;
    values[3 * r + 1] = v.inv_sqrt_bc2;
    values[3 * r + 2] = v.decay;
  }
  cuda::detail::write_graph_input(c->values, values);   // no host wait, no staging buffer
}

void Adam::pull_steps() const {
  const std::shared_ptr<CapturedStep> c = device_steps_;
  if (!c || cuda::is_current_stream_capturing()) return;
  const RawTensor host = c->steps.to(Device::cpu()).contiguous();   // the one synchronization
  const double* v = host.data<double>();
  auto* self = const_cast<Adam*>(this);
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (std::size_t r = 0; r < c->params.size(); ++r)   // 2^63 (a count at int64's limit) stays at the limit
    self->state_[c->params[r]].step = v[r] >= 0x1p63 ? kMax : static_cast<int64_t>(v[r]);
  self->device_steps_.reset();
}

void Adam::capture_step(const RawTensor& found_inf) {
  const char* who = decoupled_ ? "AdamW" : "Adam";
  std::vector<std::size_t> captured;
  Device device = Device::cpu();
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    if (!p.grad().defined()) continue;
    const AdamOptions& o = options_of<AdamOptions>(i);
    TG_CHECK(o.capturable_, Error, who, ": step() inside a CUDA graph capture, but parameter group ", group_of(i),
             " is not capturable: its step count and bias corrections would be frozen into the graph; build the "
             "optimizer with AdamOptions(lr).capturable(true)");
    if (captured.empty()) device = p.device();
    TG_CHECK(p.device() == device && device.is_cuda(), Error, who, ": step() inside a CUDA graph capture updates "
             "parameters on ", device, " and ", p.device(), "; a capture holds the work of one CUDA device");
    const State& s = state_[i];
    TG_CHECK(s.exp_avg.defined() && s.exp_avg.device() == p.device() && s.exp_avg.dtype() == state_dtype(p.dtype()) &&
                 (!o.amsgrad_ || s.max_exp_avg_sq.defined()),
             Error, who, ": the first step of parameter ", i, " inside a CUDA graph capture: it creates the state, "
             "and every replay would do so again; take one step before capturing (a warm-up)");
    captured.push_back(i);
  }
  if (captured.empty()) return;
  auto c = std::make_shared<CapturedStep>();
  c->owner = this;
  c->params = captured;
  // Written by the replay hook before each replay, so in memory no temporary of the graph shares.
  const int64_t n = static_cast<int64_t>(captured.size());
  RawTensor next_steps;
  if (found_inf.defined()) {   // the step counts on the device
    c->steps = cuda::detail::graph_input(n, device.index()).view({n, 1});
    c->inputs = cuda::detail::graph_input(4 * n, device.index()).view({n, 4});
    next_steps = prim::add(c->steps, prim::scalar_like(1.0, c->steps));
    c->values = step_values_on_device(c->inputs, next_steps);
  } else {
    c->values = cuda::detail::graph_input(3 * n, device.index()).view({n, 3});
  }
  auto update_all = [&] {
    std::vector<AdamParam> update;
    std::vector<const AdamOptions*> options;
    for (std::size_t r = 0; r < captured.size(); ++r) {
      const std::size_t i = captured[r];
      const AdamOptions& o = options_of<AdamOptions>(i);
      const State& s = state_[i];
      update.push_back(AdamParam{update_target(i), update_grad(i), s.exp_avg, s.exp_avg_sq,
                                 o.amsgrad_ ? s.max_exp_avg_sq : RawTensor(), lr_of(i), s.step + 1,
                                 c->values.select(0, static_cast<int64_t>(r))});
      options.push_back(&o);
    }
    c->hyper = step_in_runs(update, options, decoupled_);
    for (std::size_t i : captured) finish_update(i);
  };
  if (found_inf.defined()) {
    restore_where_found(found_inf, update_all);   // Note [Skipped captured steps]
    prim::copy_(c->steps, prim::where(found_mask(found_inf), c->steps, next_steps));
  } else {
    update_all();
  }
  captured_.erase(std::remove_if(captured_.begin(), captured_.end(), [](const auto& w) { return w.expired(); }),
                  captured_.end());
  captured_.push_back(c);
  cuda::detail::add_replay_hook([c] {
    TG_CHECK(c->owner != nullptr, Error, "CUDAGraph::replay: the Adam optimizer whose step was captured in this "
             "graph has been destroyed");
    c->owner->write_step_values(c);
  });
}

void Adam::check_step(const char* who) const {
  check_grads(who);   // a step updates all parameters or none
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    check_state_matches(who, i, "exp_avg", state_[i].exp_avg);
    check_state_matches(who, i, "exp_avg_sq", state_[i].exp_avg_sq);
    check_state_matches(who, i, "max_exp_avg_sq", state_[i].max_exp_avg_sq);
  }
}

void Adam::capture_step_unless_found(const RawTensor& found_inf) {
  check_step(decoupled_ ? "AdamW" : "Adam");
  NoGradGuard no_grad;
  capture_step(found_inf);   // Note [Captured Adam]
}

void Adam::step() {
  check_step(decoupled_ ? "AdamW" : "Adam");
  NoGradGuard no_grad;
  if (cuda::is_current_stream_capturing()) {
    bool on_cuda = false;
    for (const Tensor& p : params_) on_cuda = on_cuda || (p.grad().defined() && p.device().is_cuda());
    if (on_cuda) {
      capture_step(RawTensor());   // Note [Captured Adam]
      return;
    }
  }
  pull_steps();
  // One fused update of every parameter with a gradient (the others were not reached by this backward).
  std::vector<AdamParam> update;
  std::vector<std::size_t> updated;   // their indices
  std::vector<const AdamOptions*> options;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    const AdamOptions& o = options_of<AdamOptions>(i);
    update_one(i, o, update, updated);
    options.push_back(&o);
  }
  step_in_runs(update, options, decoupled_);
  for (std::size_t i : updated) finish_update(i);
}

void Adam::update_one(std::size_t i, const AdamOptions& o, std::vector<AdamParam>& update,
                      std::vector<std::size_t>& updated) {
  Tensor& p = params_[i];
  State& s = state_[i];
  const DType sd = state_dtype(p.dtype());   // Note [Master weights]
  if (!s.exp_avg.defined()) {
    s.exp_avg = prim::full(p.shape(), 0.0, sd, p.device());
    s.exp_avg_sq = prim::full(p.shape(), 0.0, sd, p.device());
  } else if (s.exp_avg.device() != p.device() || s.exp_avg.dtype() != sd) {   // the module moved
    s.exp_avg = s.exp_avg.to(p.device()).to(sd);
    s.exp_avg_sq = s.exp_avg_sq.to(p.device()).to(sd);
    if (s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = s.max_exp_avg_sq.to(p.device()).to(sd);
  }
  // Zeros also when the group's amsgrad was turned on after some steps (where PyTorch raises a
  // KeyError): max(0, v) is v, so the maximum starts from the next average.
  if (o.amsgrad_ && !s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = prim::full(p.shape(), 0.0, sd, p.device());
  if (s.step < std::numeric_limits<int64_t>::max()) ++s.step;   // a loaded step may be at int64's limit
  update.push_back(AdamParam{update_target(i), update_grad(i), s.exp_avg, s.exp_avg_sq,
                             o.amsgrad_ ? s.max_exp_avg_sq : RawTensor(), lr_of(i), s.step, RawTensor()});
  updated.push_back(i);
}

std::vector<std::pair<std::string, RawTensor>> Adam::state() const {
  pull_steps();
  std::vector<std::pair<std::string, RawTensor>> out;
  for (std::size_t i = 0; i < state_.size(); ++i) {
    const State& s = state_[i];
    if (!s.exp_avg.defined()) continue;
    const std::string k = std::to_string(i);
    out.emplace_back("exp_avg." + k, s.exp_avg);
    out.emplace_back("exp_avg_sq." + k, s.exp_avg_sq);
    if (s.max_exp_avg_sq.defined()) out.emplace_back("max_exp_avg_sq." + k, s.max_exp_avg_sq);
    out.emplace_back("step." + k, prim::from_host(&s.step, {}, kInt64, Device::cpu()));   // exact, not via double
  }
  append_master_state(out);
  return out;
}

void Adam::set_state(const std::vector<std::pair<std::string, RawTensor>>& entries) {
  // Validate every entry and that each parameter's entries are complete, then copy, then swap.
  pull_steps();   // the loaded counts replace the device's too: the next replay writes them there
  std::vector<State> next(params_.size());
  std::vector<RawTensor> masters(params_.size());
  std::vector<bool> has_step(params_.size(), false);
  for (const auto& [name, t] : entries) {
    if (read_master_entry(name, t, masters, "Adam::set_state")) continue;
    const std::string prefix = name.substr(0, name.find('.'));
    const std::size_t i = state_index(name, prefix, "Adam::set_state");
    State& s = next[i];
    if (prefix == "step") {
      TG_CHECK(t.defined() && t.dtype() == kInt64 && t.numel() == 1, Error, "Adam::set_state: \"", name,
               "\" must be a one-element int64 tensor");
      TG_CHECK(!has_step[i], Error, "Adam::set_state: duplicate entry \"", name, "\"");
      s.step = t.to(Device::cpu()).contiguous().data<int64_t>()[0];   // exact: a double cannot hold every int64
      TG_CHECK(s.step >= 1, Error, "Adam::set_state: \"", name, "\" must be at least 1, got ", s.step);
      has_step[i] = true;
      continue;
    }
    RawTensor* slot = prefix == "exp_avg" ? &s.exp_avg
                 : prefix == "exp_avg_sq" ? &s.exp_avg_sq
                 : prefix == "max_exp_avg_sq" ? &s.max_exp_avg_sq : nullptr;
    TG_CHECK(slot != nullptr, Error, "Adam::set_state: unexpected entry \"", name, "\"");
    TG_CHECK(!slot->defined(), Error, "Adam::set_state: duplicate entry \"", name, "\"");
    check_state_entry(name, t, i, "Adam::set_state");
    *slot = t;
  }
  for (std::size_t i = 0; i < next.size(); ++i) {
    State& s = next[i];
    const bool any = s.exp_avg.defined() || s.exp_avg_sq.defined() || s.max_exp_avg_sq.defined() || has_step[i];
    if (!any) continue;
    TG_CHECK(s.exp_avg.defined() && s.exp_avg_sq.defined() && has_step[i] &&
                 s.max_exp_avg_sq.defined() == options_of<AdamOptions>(i).amsgrad_,
             Error, "Adam::set_state: the state of parameter ", i, " is incomplete (needs exp_avg, exp_avg_sq, step",
             options_of<AdamOptions>(i).amsgrad_ ? " and max_exp_avg_sq with amsgrad" : " and no max_exp_avg_sq without amsgrad", ")");
  }
  for (std::size_t i = 0; i < next.size(); ++i) {
    State& s = next[i];
    if (!s.exp_avg.defined()) continue;
    const Device d = params_[i].device();
    s.exp_avg = private_copy(s.exp_avg, d);
    s.exp_avg_sq = private_copy(s.exp_avg_sq, d);
    if (s.max_exp_avg_sq.defined()) s.max_exp_avg_sq = private_copy(s.max_exp_avg_sq, d);
  }
  state_ = std::move(next);
  install_master_state(std::move(masters));
}

}  // namespace optim
}  // namespace tg
