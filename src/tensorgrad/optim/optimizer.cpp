// optim/optimizer.cpp: the Optimizer base (parameter groups and their options, zero_grad, the checks
// and master-weight helpers every step uses) and SGD. Validation of every parameter and every group's
// options happens before any is updated, so a step either completes for all parameters or changes none.
#include "tensorgrad/optim/optimizer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/prim/cuda_graph.h"
#include "tensorgrad/prim/prim.h"

namespace tg {
namespace optim {

OptimizerOptions& ParamGroup::options() {
  TG_CHECK(options_ != nullptr, Error, "param_groups: this parameter group has no options (only a group inside an "
           "optimizer always has them)");
  return *options_;
}

const OptimizerOptions& ParamGroup::options() const {
  TG_CHECK(options_ != nullptr, Error, "param_groups: this parameter group has no options (only a group inside an "
           "optimizer always has them)");
  return *options_;
}

Optimizer::Optimizer(std::vector<Tensor> params, double lr)
    : Optimizer(std::vector<ParamGroup>{ParamGroup{std::move(params), lr}}, LROptions(lr), "optimizer") {}

Optimizer::Optimizer(std::vector<ParamGroup> groups, double default_lr)
    : Optimizer(std::move(groups), LROptions(default_lr), "optimizer") {}

Optimizer::Optimizer(std::vector<ParamGroup> groups, const OptimizerOptions& defaults, std::string name)
    : defaults_(defaults.clone()), name_(std::move(name)) {
  // The defaults are checked before the parameters, as PyTorch's constructors order their errors.
  check_options(*defaults_, std::size_t(-1), name_.c_str());
  for (ParamGroup& g : groups) add_param_group(std::move(g));
  // PyTorch's check: an optimizer over a model with no registered parameters would silently do nothing
  TG_CHECK(!params_.empty(), Error, "optimizer got an empty parameter list (did the model register its parameters "
           "with register_parameter / register_module?)");
}

void Optimizer::check_options(const OptimizerOptions& o, std::size_t group, const char* who) const {
  const std::string at = group == std::size_t(-1) ? std::string(who)
                                                   : std::string(who) + " (parameter group " + std::to_string(group) + ")";
  TG_CHECK(defaults_->accepts(o), Error, at, ": the group's options are ", o.type_name(), ", options of another "
           "optimizer; give it ", defaults_->type_name());
  TG_CHECK(o.get_lr() >= 0, Error, at, ": invalid learning rate ", o.get_lr());   // NaN too
  o.check(at);
}

void Optimizer::add_param_group(ParamGroup group) {
  const std::size_t g = groups_.size();
  std::unique_ptr<OptimizerOptions> options;
  if (group.has_options()) {
    options = group.options().clone();
  } else {
    options = defaults_->clone();
    if (group.lr()) options->set_lr(*group.lr());
  }
  check_options(*options, g, name_.c_str());
  for (std::size_t i = 0; i < group.params().size(); ++i) {
    const Tensor& p = group.params()[i];
    TG_CHECK(p.defined() && p.is_leaf(), Error, name_, ": parameter ", i, " of group ", g,
             " must be a defined leaf Tensor");
    for (const Tensor& q : params_)
      TG_CHECK(q.impl() != p.impl(), Error, name_, ": some parameters appear in more than one parameter group");
    for (std::size_t j = 0; j < i; ++j)
      TG_CHECK(group.params()[j].impl() != p.impl(), Error, name_, ": some parameters appear more than once in "
               "parameter group ", g);
  }
  for (const Tensor& p : group.params()) {
    params_.push_back(p);
    group_of_.push_back(g);
  }
  group.set_options(std::move(options));
  groups_.push_back(std::move(group));
  group_initial_lr_.emplace_back();
  on_params_added();
}

double Optimizer::lr(std::size_t group) const {
  TG_CHECK(group < groups_.size(), IndexError, "optimizer: parameter group ", group, " does not exist (",
           groups_.size(), " groups)");
  return groups_[group].options().get_lr();
}

std::optional<double> Optimizer::initial_lr(std::size_t group) const {
  TG_CHECK(group < groups_.size(), IndexError, "optimizer: parameter group ", group, " does not exist (",
           groups_.size(), " groups)");
  return group_initial_lr_[group];
}

void Optimizer::set_initial_lr(std::size_t group, double lr) {
  TG_CHECK(group < groups_.size(), IndexError, "optimizer: parameter group ", group, " does not exist (",
           groups_.size(), " groups)");
  group_initial_lr_[group] = lr;
}

void Optimizer::set_lr(double lr) {
  for (std::size_t g = 0; g < groups_.size(); ++g) set_lr(g, lr);
}

void Optimizer::set_lr(std::size_t group, double lr) {
  TG_CHECK(group < groups_.size(), IndexError, "optimizer: parameter group ", group, " does not exist (",
           groups_.size(), " groups)");
  TG_CHECK(lr >= 0, Error, "optimizer: invalid learning rate ", lr);
  groups_[group].options().set_lr(lr);
}

void Optimizer::zero_grad(bool set_to_none) {
  for (Tensor& p : params_) {
    if (set_to_none) {
      p.zero_grad();
    } else if (p.grad().defined()) {
      NoGradGuard no_grad;
      prim::fill_(p.grad().data(), 0.0);
    }
  }
}

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params), std::nullopt}}, options) {}

void SGDOptions::check(const std::string& who) const {
  TG_CHECK(momentum_ >= 0, Error, who, ": invalid momentum ", momentum_);
  TG_CHECK(weight_decay_ >= 0, Error, who, ": invalid weight_decay value ", weight_decay_);
  TG_CHECK(!nesterov_ || (momentum_ > 0 && dampening_ == 0), Error,
           who, ": Nesterov momentum requires a momentum and zero dampening");
}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions options) : Optimizer(std::move(groups), options, "SGD") {
  momentum_buffer_.resize(params_.size());
}

void Optimizer::check_grads(const char* who) const {
  // The groups may have been changed through param_groups() since the last step: options of another
  // type or with a bad value, or a group replaced by one with other parameters.
  std::size_t k = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const ParamGroup& group = groups_[g];
    TG_CHECK(group.has_options(), Error, who, ": parameter group ", g, " has no options");
    check_options(group.options(), g, who);
    bool same = true;
    for (const Tensor& p : group.params()) same = same && k < params_.size() && params_[k++].impl() == p.impl();
    TG_CHECK(same, Error, who, ": the parameters of group ", g, " changed since the optimizer was built; use "
             "add_param_group to add parameters");
  }
  TG_CHECK(k == params_.size(), Error, who, ": the parameter groups changed since the optimizer was built; use "
           "add_param_group to add parameters");
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    TG_CHECK(g.shape() == p.shape() && g.dtype() == p.dtype() && g.device() == p.device(), Error, who, ": parameter ",
             i, " ", tensor_meta_str(p.data()), " on ", p.device(), " has a gradient ", tensor_meta_str(g.data()),
             " on ", g.device(), " that does not match it");
    TG_CHECK(p.data().is_contiguous(), Error, who, ": parameter ", i, " must be contiguous");
  }
}

std::vector<std::pair<std::string, double>> OptimizerOptions::values() const {
  struct Reader final : OptionFields {
    std::vector<std::pair<std::string, double>> out;
    void operator()(const char* name, double& v) override { out.emplace_back(name, v); }
    void operator()(const char* name, bool& v) override { out.emplace_back(name, v ? 1.0 : 0.0); }
    void operator()(const char* name, int64_t& v) override { out.emplace_back(name, static_cast<double>(v)); }
  } reader;
  reader.out.emplace_back("lr", get_lr());
  clone()->fields(reader);   // fields() may write: read a copy
  return std::move(reader.out);
}

bool OptimizerOptions::set_value(const std::string& name, double v) {
  if (name == "lr") {
    set_lr(v);
    return true;
  }
  struct Writer final : OptionFields {
    const std::string& name;
    double v;
    bool found = false;
    Writer(const std::string& n, double value) : name(n), v(value) {}
    void operator()(const char* n, double& x) override {
      if (name == n) x = v, found = true;
    }
    void operator()(const char* n, bool& x) override {
      if (name == n) x = v != 0, found = true;
    }
    void operator()(const char* n, int64_t& x) override {
      if (name != n) return;
      TG_CHECK(v == std::trunc(v) && std::fabs(v) < 9e18, Error, "set_value: option '", name, "' is a count, got ", v);
      x = static_cast<int64_t>(v);
      found = true;
    }
  } writer(name, v);
  fields(writer);
  return writer.found;
}

void Optimizer::refuse_capture(const char* who) const {
  if (!cuda::is_current_stream_capturing()) return;
  for (const Tensor& p : params_)
    TG_CHECK(!p.device().is_cuda(), Error, who, ": step() inside a CUDA graph capture: its step count and bias "
             "corrections are computed on the host and would be frozen into the graph, so every replay would "
             "repeat this step's update; capture the forward and backward only and call step() after replay(), "
             "or use SGD or Adam/AdamW with capturable(true)");
}

// Note [Skipped captured steps]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Eagerly a GradScaler reads its inf/NaN flag and calls step() or not; a CUDA graph cannot read it
// back, so inside a capture each replay decides on the device (Note [GradScaler in CUDA graphs] in
// optim/grad_scaler.cpp). capture_step_unless_found captures the update as usual, between a clone
// of everything it writes and a where(found, saved, updated) copied back: the parameters with a
// gradient and the optimizer's state tensors (state() aliases the live buffers: momentum, Adam's
// moments, the float32 master copies of 16-bit parameters). A replay that found an inf or a NaN so
// leaves every bit as it was, and a clean one keeps the update's bits (where() copies them). What
// an optimizer keeps on the host must not advance either: SGD has nothing there; Adam moves its
// captured step counts to the device and advances them with the same where() (Note [Captured Adam]
// in optim/adam.cpp). The other optimizers compute their scalars on the host and are refused.
void Optimizer::capture_step_unless_found(const RawTensor&) {
  throw Error(detail::cat(name_, ": GradScaler::step inside a CUDA graph capture skips a step with inf/NaN "
                          "gradients on the device, which needs the optimizer's whole state there; ", name_,
                          " computes its scalars on the host, so only SGD and Adam/AdamW with capturable(true) "
                          "are supported; capture the forward and the scaled backward only and call step() and "
                          "update() after replay()"));
}

RawTensor Optimizer::found_mask(const RawTensor& found_inf) {
  return prim::binary(BinaryOp::Ne, found_inf, prim::scalar_like(0.0, found_inf), "GradScaler::step");
}

void Optimizer::restore_where_found(const RawTensor& found_inf, const std::function<void()>& update) {
  std::vector<RawTensor> targets;
  for (const Tensor& p : params_)
    if (p.grad().defined()) targets.push_back(p.data());
  for (const auto& entry : state())
    if (entry.second.device().is_cuda()) targets.push_back(entry.second);
  std::vector<RawTensor> saved;
  saved.reserve(targets.size());
  for (const RawTensor& t : targets) saved.push_back(t.clone());
  update();
  const RawTensor skip = found_mask(found_inf);
  for (std::size_t i = 0; i < targets.size(); ++i) prim::copy_(targets[i], prim::where(skip, saved[i], targets[i]));
}

void Optimizer::check_state_matches(const char* who, std::size_t i, const char* name, const RawTensor& state) const {
  const Tensor& p = params_[i];
  TG_CHECK(!state.defined() || state.shape() == p.shape(), ShapeError, who, ": the size of ", name, " (",
           shape_str(state.shape()), ") must match the size of parameter ", i, " (", shape_str(p.shape()),
           "): its value was replaced by one of another shape since the last step; create a new optimizer for it");
}

// Note [Captured SGD]
// ~~~~~~~~~~~~~~~~~~~
// SGD's update has one per-step scalar, the learning rate, which travels to the update kernel by
// value and so would be frozen into a CUDA graph that captured the step. A group without
// capturable() keeps that: its captured step replays with the lr it was captured with, and the
// graph's replay hook raises when the group's lr changed since (a scheduler's change would otherwise
// be ignored). A group with capturable(true) reads its lr from a float64 on the device instead
// (SgdParam::lr_value): one per captured parameter, in a block no temporary of the graph shares
// (cuda::detail::graph_input, as Note [Captured Adam] in optim/adam.cpp explains), written with the
// groups' current lrs by the replay hook before each replay (one small launch, no host wait). The
// kernels round that double to the parameter's dtype exactly as an eager step rounds its lr, so N
// replays with a scheduler stepping in between give the bits of N eager steps. Momentum buffers must
// exist before the capture (a warm-up step): creating one inside would reset it at every replay.
struct SGD::CapturedStep {
  SGD* owner;                        // null once the optimizer is destroyed
  std::vector<std::size_t> params;   // the captured parameters' indices
  std::vector<double> lrs;           // and the lr each was captured with
  std::vector<bool> on_device;       // whether its group is capturable: its lr is read from values
  RawTensor values;                  // float64 (params.size()) on the device, or undefined when none is
};

SGD::~SGD() {
  for (const auto& weak : captured_)
    if (auto c = weak.lock()) c->owner = nullptr;
}

void SGD::step() {
  check_grads("SGD");   // a step updates all parameters or none
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (params_[i].grad().defined()) check_state_matches("SGD", i, "momentum_buffer", momentum_buffer_[i]);
  NoGradGuard no_grad;
  bool capturing = false;   // a step on CUDA inside a capture: Note [Captured SGD]
  for (const Tensor& p : params_)
    capturing = capturing || (p.grad().defined() && p.device().is_cuda() && cuda::is_current_stream_capturing());
  std::shared_ptr<CapturedStep> c;
  if (capturing) {
    c = std::make_shared<CapturedStep>();
    c->owner = this;
    bool any_capturable = false;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (!params_[i].grad().defined()) continue;
      c->params.push_back(i);
      c->lrs.push_back(lr_of(i));
      c->on_device.push_back(options_of<SGDOptions>(i).capturable_);
      any_capturable = any_capturable || c->on_device.back();
    }
    if (any_capturable) {
      // Validated before anything is queued, so that a refused step leaves the capture intact.
      const Device device = params_[c->params.front()].device();
      for (std::size_t i : c->params) {
        TG_CHECK(params_[i].device() == device && device.is_cuda(), Error, "SGD: a capturable step() inside a CUDA "
                 "graph capture updates parameters on ", device, " and ", params_[i].device(), "; a capture holds "
                 "the work of one CUDA device");
        TG_CHECK(options_of<SGDOptions>(i).momentum_ == 0 || momentum_buffer_[i].defined(), Error,
                 "SGD: the first step with momentum inside a CUDA graph capture: it creates the momentum buffer, "
                 "and every replay would do so again; take one step before capturing (a warm-up)");
      }
      c->values = cuda::detail::graph_input(static_cast<int64_t>(c->params.size()), device.index());
    }
  }
  // One fused update of every parameter with a gradient per run of consecutive groups with the same
  // hyperparameters (the learning rate travels with each parameter, so groups that differ only in it
  // share the call): prim::sgd_step groups them by (device, dtype), one launch per 24 on CUDA.
  std::vector<SgdParam> update;
  std::vector<std::size_t> updated;   // their indices
  SgdHyper hyper;
  auto flush = [&] {
    if (!update.empty()) prim::sgd_step(update, hyper);
    update.clear();
  };
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    const SGDOptions& o = options_of<SGDOptions>(i);
    const SgdHyper h{o.momentum_, o.dampening_, o.weight_decay_, o.nesterov_};
    if (h.momentum != hyper.momentum || h.dampening != hyper.dampening || h.weight_decay != hyper.weight_decay ||
        h.nesterov != hyper.nesterov) {
      flush();
      hyper = h;
    }
    const Tensor g = p.grad();
    if (g.defined()) {   // else not reached by this backward
      bool first = false;
      RawTensor& buf = momentum_buffer_[i];
      const DType sd = state_dtype(p.dtype());   // Note [Master weights]
      if (o.momentum_ != 0 && !buf.defined()) {
        TG_CHECK(!(p.device().is_cuda() && cuda::is_current_stream_capturing()), Error,
                 "SGD: the first step with momentum inside a CUDA graph capture: it creates the momentum buffer, "
                 "and every replay would do so again; take one step before capturing (a warm-up)");
        buf = prim::empty(p.shape(), sd, p.device());   // set by the first step: v = d
        first = true;
      } else if (buf.defined() && (buf.device() != p.device() || buf.dtype() != sd)) {
        buf = buf.to(p.device()).to(sd);   // the module moved: keep the momentum
      }
      RawTensor lr_value;
      if (c && c->values.defined()) {
        const std::size_t r = updated.size();   // c->params lists the updated parameters in this order
        if (c->on_device[r]) lr_value = c->values.narrow(0, static_cast<int64_t>(r), 1);
      }
      update.push_back(SgdParam{update_target(i), update_grad(i), o.momentum_ != 0 ? buf : RawTensor(), lr_of(i),
                                first, lr_value});
      updated.push_back(i);
    }
  }
  flush();
  for (std::size_t i : updated) finish_update(i);
  if (!c || c->params.empty()) return;
  captured_.erase(std::remove_if(captured_.begin(), captured_.end(), [](const auto& w) { return w.expired(); }),
                  captured_.end());
  captured_.push_back(c);
  cuda::detail::add_replay_hook([c] {
    TG_CHECK(c->owner != nullptr, Error, "CUDAGraph::replay: the SGD optimizer whose step was captured in this graph "
             "has been destroyed");
    std::vector<double> values;
    for (std::size_t r = 0; r < c->params.size(); ++r) {
      const double now = c->owner->lr_of(c->params[r]);
      if (c->on_device[r]) {
        TG_CHECK(now >= 0, Error, "CUDAGraph::replay: SGD's lr of parameter ", c->params[r], " (group ",
                 c->owner->group_of(c->params[r]), ") is negative (", now, "); set an lr >= 0 before replay()");
      } else {
        TG_CHECK(now == c->lrs[r], Error, "CUDAGraph::replay: SGD's lr of parameter ", c->params[r], " (group ",
                 c->owner->group_of(c->params[r]), ") is ", now, " but the step was captured with ", c->lrs[r],
                 ": a captured SGD step keeps the lr it was captured with; capture the step again after changing "
                 "it, or build the optimizer with SGDOptions(lr).capturable(true), which reads it on the device");
      }
      values.push_back(now);
    }
    if (c->values.defined()) cuda::detail::write_graph_input(c->values, values);   // no host wait
  });
}

void SGD::capture_step_unless_found(const RawTensor& found_inf) {
  restore_where_found(found_inf, [this] { step(); });   // Note [Skipped captured steps]
}

// The base throws rather than returning nothing, so that an optimizer whose state was never wired
// up cannot write a checkpoint that silently drops it.
std::vector<std::pair<std::string, RawTensor>> Optimizer::state() const {
  throw Error("state: this optimizer does not implement checkpoint state (override Optimizer::state and set_state)");
}

void Optimizer::set_state(const std::vector<std::pair<std::string, RawTensor>>&) {
  throw Error("set_state: this optimizer does not implement checkpoint state (override Optimizer::state and set_state)");
}

std::vector<std::pair<std::string, RawTensor>> SGD::state() const {
  std::vector<std::pair<std::string, RawTensor>> out;
  for (std::size_t i = 0; i < momentum_buffer_.size(); ++i)
    if (momentum_buffer_[i].defined()) out.emplace_back("momentum_buffer." + std::to_string(i), momentum_buffer_[i]);
  append_master_state(out);
  return out;
}

void SGD::set_state(const std::vector<std::pair<std::string, RawTensor>>& state) {
  // Validate every entry, then make private copies on each parameter's device, then swap: a
  // failure leaves the old state in place.
  std::vector<RawTensor> next(params_.size()), masters(params_.size());
  for (const auto& [name, t] : state) {
    if (read_master_entry(name, t, masters, "SGD::set_state")) continue;
    // "velocity.<i>": the same buffer as named in checkpoints marked "format": "tensorgrad-1".
    const char* prefix = name.rfind("velocity.", 0) == 0 ? "velocity" : "momentum_buffer";
    const std::size_t i = state_index(name, prefix, "SGD::set_state");
    TG_CHECK(!next[i].defined(), Error, "SGD::set_state: duplicate entry \"", name, "\"");
    check_state_entry(name, t, i, "SGD::set_state");
    next[i] = t;
  }
  for (std::size_t i = 0; i < next.size(); ++i)
    if (next[i].defined()) next[i] = private_copy(next[i], params_[i].device());
  momentum_buffer_ = std::move(next);
  install_master_state(std::move(masters));
}

std::size_t Optimizer::state_index(const std::string& name, const std::string& prefix, const char* who) const {
  const std::string head = prefix + ".";
  const std::string digits = name.rfind(head, 0) == 0 ? name.substr(head.size()) : std::string();
  bool ok = !digits.empty() && digits.size() <= 9 && (digits == "0" || digits[0] != '0') &&
            digits.find_first_not_of("0123456789") == std::string::npos;
  const std::size_t i = ok ? std::size_t(std::stoul(digits)) : 0;
  TG_CHECK(ok && i < params_.size(), Error, who, ": unexpected entry \"", name, "\" (expected ", prefix,
           ".<i> for 0 <= i < ", params_.size(), ")");
  return i;
}

void Optimizer::check_state_entry(const std::string& name, const RawTensor& t, std::size_t i, const char* who) const {
  const RawTensor& like = params_[i].data();
  TG_CHECK(t.defined(), Error, who, ": entry \"", name, "\" is undefined");
  TG_CHECK(t.shape() == like.shape(), ShapeError, who, ": \"", name, "\" has shape ", shape_str(t.shape()),
           " but parameter ", i, " has shape ", shape_str(like.shape()));
  const DType want = state_dtype(like.dtype());   // Note [Master weights]
  TG_CHECK(t.dtype() == want, DTypeError, who, ": \"", name, "\" is ", dtype_name(t.dtype()), " but parameter ", i,
           "'s state is ", dtype_name(want), " (the parameter is ", dtype_name(like.dtype()), ")");
}

// Note [Master weights]
// ~~~~~~~~~~~~~~~~~~~~~
// A float16 or bfloat16 parameter is updated through a float32 copy: the step reads the gradient
// in float32, updates the copy and the float32 state buffers (momentum, exp_avg, ...), then rounds
// the copy into the parameter. Small updates (lr * grad below half a unit in the last place of the
// 16-bit weight) then accumulate in the copy instead of being rounded away at every step, which is
// what makes pure bfloat16 training converge. The copy is saved with the optimizer's state
// ("master_weight.<i>"); it is rebuilt from the parameter when the parameter's storage or version
// changed since the last step (the user wrote into the weight, or loaded a checkpoint into it).
DType Optimizer::state_dtype(DType param) { return is_low_precision(param) ? kFloat32 : param; }

RawTensor Optimizer::update_target(std::size_t i) {
  const RawTensor& w = params_[i].data();
  if (state_dtype(w.dtype()) == w.dtype()) return w;
  if (master_.size() < params_.size()) master_.resize(params_.size());
  Master& m = master_[i];
  const bool valid = m.weight.defined() && m.storage.lock() == w.storage() && m.version == w.version() &&
                     m.weight.device() == w.device() && m.weight.shape() == w.shape();
  if (!valid) m.weight = w.to(kFloat32).contiguous().clone();
  return m.weight;
}

RawTensor Optimizer::update_grad(std::size_t i) const {
  const RawTensor g = params_[i].grad().data();
  const DType want = state_dtype(g.dtype());
  return (g.dtype() == want ? g : g.to(want)).contiguous();
}

void Optimizer::finish_update(std::size_t i) {
  const RawTensor& w = params_[i].data();
  if (state_dtype(w.dtype()) == w.dtype()) return;   // updated in place by prim, which bumped its version
  Master& m = master_[i];
  prim::copy_(w, m.weight);   // rounded to nearest even; bumps w's version
  m.storage = w.storage();
  m.version = w.version();
}

void Optimizer::append_master_state(std::vector<std::pair<std::string, RawTensor>>& out) const {
  for (std::size_t i = 0; i < master_.size(); ++i)
    if (master_[i].weight.defined()) out.emplace_back("master_weight." + std::to_string(i), master_[i].weight);
}

bool Optimizer::read_master_entry(const std::string& name, const RawTensor& t, std::vector<RawTensor>& next,
                                  const char* who) const {
  if (name.rfind("master_weight.", 0) != 0) return false;
  const std::size_t i = state_index(name, "master_weight", who);
  TG_CHECK(!next[i].defined(), Error, who, ": duplicate entry \"", name, "\"");
  TG_CHECK(t.defined() && t.shape() == params_[i].shape(), ShapeError, who, ": \"", name, "\" must have parameter ",
           i, "'s shape ", shape_str(params_[i].shape()));
  TG_CHECK(t.dtype() == kFloat32 && state_dtype(params_[i].dtype()) == kFloat32 &&
               params_[i].dtype() != kFloat32,
           DTypeError, who, ": \"", name, "\" must be a float32 copy of a float16 or bfloat16 parameter (parameter ",
           i, " is ", dtype_name(params_[i].dtype()), ", the entry ", dtype_name(t.dtype()), ")");
  next[i] = t;
  return true;
}

void Optimizer::install_master_state(std::vector<RawTensor> next) {
  master_.assign(params_.size(), Master{});
  for (std::size_t i = 0; i < next.size(); ++i) {
    if (!next[i].defined()) continue;
    const RawTensor& w = params_[i].data();
    master_[i] = Master{private_copy(next[i], w.device()), w.storage(), w.version()};
  }
}

RawTensor Optimizer::private_copy(const RawTensor& t, Device device) {
  const RawTensor moved = t.to(device);
  return moved.storage() == t.storage() ? moved.clone() : moved.contiguous();   // never alias the caller's
}

}  // namespace optim
}  // namespace tg
