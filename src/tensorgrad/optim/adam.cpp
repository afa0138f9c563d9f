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
struct Adam::CapturedStep {
  Adam* owner;                        // null once the optimizer is destroyed
  RawTensor values;                   // (n, 3) float64 on the device: AdamStepValues per parameter
  std::vector<std::size_t> params;    // the captured parameters' indices
  std::vector<AdamHyper> hyper;       // and their groups' hyperparameters
};

Adam::~Adam() {
  for (const auto& weak : captured_)
    if (auto c = weak.lock()) c->owner = nullptr;
}

void Adam::write_step_values(const CapturedStep& c) {
  std::vector<double> values(3 * c.params.size());
  for (std::size_t r = 0; r < c.params.size(); ++r) {
    State& s = state_[c.params[r]];
    if (s.step < std::numeric_limits<int64_t>::max()) ++s.step;
    const AdamStepValues v = adam_step_values(c.hyper[r], lr_of(c.params[r]), s.step);
    values[3 * r] = v.step_size;
    values[3 * r + 1] = v.inv_sqrt_bc2;
    values[3 * r + 2] = v.decay;
  }
  cuda::detail::write_graph_input(c.values, values);   // no host wait, no staging buffer
}

void Adam::capture_step() {
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
  c->values = cuda::detail::graph_input(3 * n, device.index()).view({n, 3});
  std::vector<AdamParam> update;
  AdamHyper hyper;
  hyper.decoupled = decoupled_;
  auto flush = [&] {
    if (!update.empty()) prim::adam_step(update, hyper);
    update.clear();
  };
  for (std::size_t r = 0; r < captured.size(); ++r) {
    const std::size_t i = captured[r];
    const AdamOptions& o = options_of<AdamOptions>(i);
    if (!same_hyper(o, hyper)) {
      flush();
      hyper = AdamHyper{o.beta1_, o.beta2_, o.eps_, o.weight_decay_, decoupled_};
    }
    c->hyper.push_back(hyper);
    const State& s = state_[i];
    update.push_back(AdamParam{update_target(i), update_grad(i), s.exp_avg, s.exp_avg_sq,
                               o.amsgrad_ ? s.max_exp_avg_sq : RawTensor(), lr_of(i), s.step + 1,
                               c->values.select(0, static_cast<int64_t>(r))});
  }
  flush();
  for (std::size_t i : captured) finish_update(i);
  captured_.erase(std::remove_if(captured_.begin(), captured_.end(), [](const auto& w) { return w.expired(); }),
                  captured_.end());
  captured_.push_back(c);
  cuda::detail::add_replay_hook([c] {
    TG_CHECK(c->owner != nullptr, Error, "CUDAGraph::replay: the Adam optimizer whose step was captured in this "
             "graph has been destroyed");
    c->owner->write_step_values(*c);
  });
}

void Adam::step() {
  const char* who = decoupled_ ? "AdamW" : "Adam";
  check_grads(who);   // a step updates all parameters or none
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (!params_[i].grad().defined()) continue;
    check_state_matches(who, i, "exp_avg", state_[i].exp_avg);
    check_state_matches(who, i, "exp_avg_sq", state_[i].exp_avg_sq);
    check_state_matches(who, i, "max_exp_avg_sq", state_[i].max_exp_avg_sq);
  }
  NoGradGuard no_grad;
  if (cuda::is_current_stream_capturing()) {
    bool on_cuda = false;
    for (const Tensor& p : params_) on_cuda = on_cuda || (p.grad().defined() && p.device().is_cuda());
    if (on_cuda) {
      capture_step();   // Note [Captured Adam]
      return;
    }
  }
  // One fused update of every parameter with a gradient per run of consecutive groups with the same
  // hyperparameters (the learning rate and amsgrad travel with each parameter, so groups that differ
  // only in them share the call): prim::adam_step groups them by (device, dtype), one launch per 24
  // on CUDA.
  std::vector<AdamParam> update;
  std::vector<std::size_t> updated;   // their indices
  AdamHyper hyper;
  hyper.decoupled = decoupled_;
  auto flush = [&] {
    if (!update.empty()) prim::adam_step(update, hyper);
    update.clear();
  };
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const AdamOptions& o = options_of<AdamOptions>(i);
    if (!same_hyper(o, hyper)) {
      flush();
      hyper = AdamHyper{o.beta1_, o.beta2_, o.eps_, o.weight_decay_, decoupled_};
    }
    if (params_[i].grad().defined()) update_one(i, o, update, updated);   // else not reached by this backward
  }
  flush();
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
