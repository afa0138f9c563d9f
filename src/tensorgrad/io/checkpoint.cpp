// io/checkpoint.cpp: tg::save / tg::load of modules, optimizers, schedulers and GradScalers (io/checkpoint.h), on
// top of save_tensors / load_tensors. The optimizers' state itself (names, shapes) is defined in
// optim/optimizer.cpp and optim/adam.cpp, the scaler's in optim/grad_scaler.cpp; nothing here knows a
// particular layer.
#include "tensorgrad/io/checkpoint.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <set>

#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/nn/module.h"
#include "tensorgrad/optim/grad_scaler.h"
#include "tensorgrad/optim/optimizer.h"
#include "tensorgrad/optim/schedulers.h"
#include "tensorgrad/prim/prim.h"

namespace tg {

namespace {
std::vector<std::pair<std::string, Tensor>> module_entries(const nn::Module& module) {
  auto out = module.named_parameters();
  for (auto& b : module.named_buffers()) out.push_back(std::move(b));
  return out;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) s += detail::cat(i ? ", " : "", '"', names[i], '"');
  return s;
}
}  // namespace

void save(const nn::Module& module, const std::string& path) {
  std::vector<std::pair<std::string, RawTensor>> tensors;
  for (const auto& e : module_entries(module)) tensors.emplace_back(e.first, e.second.data());
  save_tensors(tensors, path);
}

IncompatibleKeys load(nn::Module& module, const std::string& path, const LoadOptions& options) {
  const auto loaded = load_tensors(path, nullptr, options);
  std::map<std::string, const RawTensor*> by_name;   // names are unique: the parser rejects duplicates
  for (const auto& l : loaded) by_name.emplace(l.first, &l.second);
  const auto entries = module_entries(module);

  // Compare everything and report every problem at once, PyTorch's load_state_dict style.
  IncompatibleKeys keys;
  std::vector<std::string> mismatches;
  std::set<std::string> expected;
  std::vector<const RawTensor*> sources(entries.size(), nullptr);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string& name = entries[i].first;
    const RawTensor& dst = entries[i].second.data();
    expected.insert(name);
    const auto it = by_name.find(name);
    if (it == by_name.end()) {
      keys.missing_keys.push_back(name);
      continue;
    }
    const RawTensor& src = *it->second;
    if (src.shape() != dst.shape())
      mismatches.push_back(detail::cat("size mismatch for ", name, ": copying a param with shape ", shape_str(src.shape()),
                                       " from checkpoint, the shape in current model is ", shape_str(dst.shape()), "."));
    if (src.dtype() != dst.dtype())
      mismatches.push_back(detail::cat("dtype mismatch for ", name, ": the checkpoint has ", dtype_name(src.dtype()),
                                       ", the current model has ", dtype_name(dst.dtype()), "."));
    sources[i] = &src;
  }
  for (const auto& l : loaded)
    if (!expected.count(l.first)) keys.unexpected_keys.push_back(l.first);
  const bool key_errors = options.strict_ && (!keys.missing_keys.empty() || !keys.unexpected_keys.empty());
  if (key_errors || !mismatches.empty()) {
    std::string msg = detail::cat("load: '", path, "': Error(s) in loading the checkpoint into the module (nothing was changed):");
    if (key_errors && !keys.missing_keys.empty())
      msg += detail::cat("\n  Missing key(s) in checkpoint: ", quoted_list(keys.missing_keys), ".");
    if (key_errors && !keys.unexpected_keys.empty())
      msg += detail::cat("\n  Unexpected key(s) in checkpoint: ", quoted_list(keys.unexpected_keys), ".");
    for (const auto& m : mismatches) msg += "\n  " + m;
    if (key_errors)
      msg += "\n  To load the keys that match and get the others back, pass tg::LoadOptions().strict(false).";
    throw SerializationError(msg);
  }

  // Everything matches: move the values to each parameter's device first, then put them in. A CPU
  // parameter that is its whole storage takes the freshly read bytes by exchange (the file's tensors
  // are private to this call), so a load copies each byte once; any other is copied into.
  std::vector<RawTensor> ready(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i)
    if (sources[i]) ready[i] = sources[i]->to(entries[i].second.device());
  NoGradGuard no_grad;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!sources[i]) continue;
    const RawTensor& dst = entries[i].second.data();
    const RawTensor& src = ready[i];
    const auto whole = [](const RawTensor& t) {
      return t.device() == Device::cpu() && t.is_contiguous() && t.offset() == 0 &&
             t.storage()->nbytes() == std::size_t(t.numel()) * dtype_size(t.dtype());
    };
    if (!(whole(dst) && whole(src) && dst.storage()->swap_bytes(*src.storage()))) prim::copy_(dst, src);
  }
  return keys;
}

// An optimizer checkpoint holds its state() and, as PyTorch's state_dict()["param_groups"] does, each
// group's options: "param_groups.<g>.<option>" (a float64 scalar per OptimizerOptions::values()
// entry, "initial_lr" when a scheduler set it) and "param_groups.<g>.params" (the indices of its
// parameters, int64). A checkpoint without them (written before they were stored) loads the state only.
namespace {
constexpr char kGroups[] = "param_groups.";

std::vector<std::pair<std::string, RawTensor>> group_entries(const optim::Optimizer& optimizer) {
  std::vector<std::pair<std::string, RawTensor>> out;
  int64_t first = 0;
  for (std::size_t g = 0; g < optimizer.num_param_groups(); ++g) {
    const optim::ParamGroup& group = optimizer.param_groups()[g];
    const std::string prefix = detail::cat(kGroups, g, ".");
    const int64_t n = static_cast<int64_t>(group.params().size());
    RawTensor indices = RawTensor::empty(Shape{n}, kInt64);
    for (int64_t i = 0; i < n; ++i) static_cast<int64_t*>(indices.raw_data())[i] = first + i;
    out.emplace_back(prefix + "params", indices);
    first += n;
    for (const auto& v : group.options().values())
      out.emplace_back(prefix + v.first, prim::full({}, v.second, kFloat64, Device::cpu()));
    if (const std::optional<double> lr0 = optimizer.initial_lr(g))
      out.emplace_back(prefix + "initial_lr", prim::full({}, *lr0, kFloat64, Device::cpu()));
  }
  return out;
}
}  // namespace

void save(const optim::Optimizer& optimizer, const std::string& path) {
  std::vector<std::pair<std::string, RawTensor>> state;
  try {
    state = optimizer.state();
    for (auto& e : group_entries(optimizer)) state.push_back(std::move(e));
  } catch (const SerializationError&) {
    throw;
  } catch (const Error& e) {
    throw SerializationError(detail::cat("save: '", path, "': ", e.what()));
  }
  save_tensors(state, path);
}

void load(optim::Optimizer& optimizer, const std::string& path, const LoadOptions& options) {
  TG_CHECK(options.strict_, SerializationError, "load: '", path,
           "': LoadOptions().strict(false) applies to modules; an optimizer's state loads whole or not at all "
           "(as PyTorch's Optimizer.load_state_dict)");
  const auto loaded = load_tensors(path, nullptr, options);
  std::vector<std::pair<std::string, RawTensor>> state;
  // the groups' options: (group, option, value), checked against the optimizer before anything changes
  struct GroupValue {
    std::size_t group;
    std::string name;
    double value;
  };
  std::vector<GroupValue> values;
  std::vector<bool> has_params(optimizer.num_param_groups(), false);
  bool any_group = false;
  try {
    std::vector<std::pair<std::string, RawTensor>> expected_params;
    for (const auto& e : group_entries(optimizer))
      if (e.first.size() > 7 && e.first.compare(e.first.size() - 7, 7, ".params") == 0) expected_params.push_back(e);
    for (const auto& e : loaded) {
      if (e.first.rfind(kGroups, 0) != 0) {
        state.push_back(e);
        continue;
      }
      any_group = true;
      const std::string rest = e.first.substr(sizeof kGroups - 1);
      const std::size_t dot = rest.find('.');
      char* end = nullptr;
      const unsigned long long g = std::strtoull(rest.c_str(), &end, 10);
      TG_CHECK(dot != std::string::npos && end == rest.c_str() + dot && dot > 0, Error, "entry '", e.first,
               "' is not param_groups.<group>.<option>");
      TG_CHECK(g < optimizer.num_param_groups(), Error, "the checkpoint has parameter group ", g,
               " but the optimizer has ", optimizer.num_param_groups(), " group(s)");
      const std::string name = rest.substr(dot + 1);
      if (name == "params") {
        const RawTensor& want = expected_params[g].second;
        const RawTensor got = e.second.to(kInt64).contiguous();
        const int64_t* g0 = static_cast<const int64_t*>(got.raw_data());
        TG_CHECK(got.shape() == want.shape() && std::equal(g0, g0 + got.numel(), static_cast<const int64_t*>(want.raw_data())),
                 Error, "parameter group ", g, " holds other parameters in the checkpoint (", shape_str(got.shape()),
                 " indices) than in the optimizer (", want.numel(), " parameters from index ",
                 want.numel() ? static_cast<const int64_t*>(want.raw_data())[0] : 0, ")");
        has_params[g] = true;
        continue;
      }
      TG_CHECK(e.second.numel() == 1 && is_floating(e.second.dtype()), Error, "entry '", e.first,
               "' must hold one floating-point number, got ", tensor_meta_str(e.second));
      const double v = e.second.to(kFloat64).item();
      if (name != "initial_lr") {
        std::unique_ptr<optim::OptimizerOptions> probe = optimizer.param_groups()[g].options().clone();
        TG_CHECK(probe->set_value(name, v), Error, "parameter group ", g, "'s options (",
                 optimizer.param_groups()[g].options().type_name(), ") have no option '", name, "'");
      }
      values.push_back({static_cast<std::size_t>(g), name, v});
    }
    if (any_group)
      for (std::size_t g = 0; g < has_params.size(); ++g)
        TG_CHECK(has_params[g], Error, "the checkpoint has no param_groups.", g, ".params: written for an optimizer "
                 "with fewer parameter groups");
  } catch (const SerializationError&) {
    throw;
  } catch (const Error& e) {
    throw SerializationError(detail::cat("load: '", path, "': the checkpoint does not fit the optimizer (nothing was changed): ",
                                         e.what()));
  }
  // The options first (the state must fit them: RMSprop's buffers follow its momentum and centered),
  // then the state, which validates every entry before it changes anything; the old options come
  // back when it refuses.
  std::vector<std::unique_ptr<optim::OptimizerOptions>> old_options;
  for (std::size_t g = 0; g < optimizer.num_param_groups(); ++g)
    old_options.push_back(optimizer.param_groups()[g].options().clone());
  try {
    for (const GroupValue& v : values)
      if (v.name != "initial_lr") optimizer.param_groups()[v.group].options().set_value(v.name, v.value);
    optimizer.set_state(state);
  } catch (const Error& e) {
    for (std::size_t g = 0; g < old_options.size(); ++g) optimizer.param_groups()[g].set_options(std::move(old_options[g]));
    throw SerializationError(detail::cat("load: '", path, "': the checkpoint does not fit the optimizer (nothing was changed): ",
                                         e.what()));
  }
  for (const GroupValue& v : values)
    if (v.name == "initial_lr") optimizer.set_initial_lr(v.group, v.value);
}

void save(const std::vector<Tensor>& tensors, const std::string& path) {
  std::vector<std::pair<std::string, RawTensor>> named;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    TG_CHECK(tensors[i].defined(), SerializationError, "save: tensor ", i, " is undefined (writing ", path, ")");
    named.emplace_back(std::to_string(i), tensors[i].data());
  }
  save_tensors(named, path);
}

void save(const Tensor& tensor, const std::string& path) {
  TG_CHECK(tensor.defined(), SerializationError, "save: the tensor is undefined (writing ", path, ")");
  save(std::vector<Tensor>{tensor}, path);
}

void load(std::vector<Tensor>& tensors, const std::string& path, const LoadOptions& options) {
  auto loaded = load_tensors(path, nullptr, options);
  std::vector<Tensor> out(loaded.size());
  for (auto& [name, value] : loaded) {
    std::size_t i = loaded.size();
    const bool digits = !name.empty() && name.size() < 10 &&
                        std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits) i = std::stoul(name);
    TG_CHECK(i < loaded.size() && !out[i].defined(), SerializationError, "load: ", path, " holds a tensor named \"",
             name, "\"; a list of ", loaded.size(), " tensors is named \"0\" to \"", loaded.size() - 1,
             "\" (tg::save(tensors, path) writes that; a module's file loads with tg::load(module, path))");
    out[i] = Tensor(std::move(value));
  }
  tensors = std::move(out);
}

void load(Tensor& tensor, const std::string& path, const LoadOptions& options) {
  auto loaded = load_tensors(path, nullptr, options);
  TG_CHECK(loaded.size() == 1, SerializationError, "load: ", path, " holds ", loaded.size(),
           " tensors, not one; load a list into a std::vector<tg::Tensor>");
  tensor = Tensor(std::move(loaded[0].second));
}

void save(const amp::GradScaler& scaler, const std::string& path) { save_tensors(scaler.state_dict(), path); }

void load(amp::GradScaler& scaler, const std::string& path, const LoadOptions& options) {
  TG_CHECK(options.strict_, SerializationError, "load: '", path,
           "': LoadOptions().strict(false) applies to modules; a GradScaler's state loads whole or not at all");
  const auto loaded = load_tensors(path, nullptr, options);
  try {
    scaler.load_state_dict(loaded);
  } catch (const Error& e) {
    throw SerializationError(detail::cat("load: '", path, "': the checkpoint does not fit the GradScaler (nothing was "
                                         "changed): ", e.what()));
  }
}

namespace {
/// A scheduler's named numbers as float64 scalars, and back.
std::vector<std::pair<std::string, RawTensor>> number_entries(const std::vector<std::pair<std::string, double>>& state) {
  std::vector<std::pair<std::string, RawTensor>> out;
  for (const auto& e : state) out.emplace_back(e.first, prim::full({}, e.second, kFloat64, Device::cpu()));
  return out;
}

template <class Scheduler>
void load_numbers(Scheduler& scheduler, const std::string& path, const LoadOptions& options) {
  TG_CHECK(options.strict_, SerializationError, "load: '", path,
           "': LoadOptions().strict(false) applies to modules; a scheduler's state loads whole or not at all");
  const auto loaded = load_tensors(path, nullptr, options);
  std::vector<std::pair<std::string, double>> state;
  try {
    for (const auto& e : loaded) {
      TG_CHECK(e.second.numel() == 1 && is_floating(e.second.dtype()), Error, "entry '", e.first,
               "' must hold one floating-point number, got ", tensor_meta_str(e.second));
      state.emplace_back(e.first, e.second.to(kFloat64).item());
    }
    scheduler.set_state(state);
  } catch (const SerializationError&) {
    throw;
  } catch (const Error& e) {
    throw SerializationError(detail::cat("load: '", path, "': the checkpoint does not fit the scheduler (nothing was changed): ",
                                         e.what()));
  }
}
}  // namespace

void save(const optim::LRScheduler& scheduler, const std::string& path) { save_tensors(number_entries(scheduler.state()), path); }

void load(optim::LRScheduler& scheduler, const std::string& path, const LoadOptions& options) {
  load_numbers(scheduler, path, options);
}

void save(const optim::ReduceLROnPlateau& scheduler, const std::string& path) {
  save_tensors(number_entries(scheduler.state()), path);
}

void load(optim::ReduceLROnPlateau& scheduler, const std::string& path, const LoadOptions& options) {
  load_numbers(scheduler, path, options);
}

}  // namespace tg
