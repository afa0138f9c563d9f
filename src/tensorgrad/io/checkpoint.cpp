// io/checkpoint.cpp: tg::save / tg::load of modules, optimizers and GradScalers (io/checkpoint.h), on
// top of save_tensors / load_tensors. The optimizers' state itself (names, shapes) is defined in
// optim/optimizer.cpp and optim/adam.cpp, the scaler's in optim/grad_scaler.cpp; nothing here knows a
// particular layer.
#include "tensorgrad/io/checkpoint.h"

#include <algorithm>
#include <set>

#include "tensorgrad/autograd/grad_mode.h"
#include "tensorgrad/core/error.h"
#include "tensorgrad/nn/module.h"
#include "tensorgrad/optim/grad_scaler.h"
#include "tensorgrad/optim/optimizer.h"
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

void save(const optim::Optimizer& optimizer, const std::string& path) {
  std::vector<std::pair<std::string, RawTensor>> state;
  try {
    state = optimizer.state();
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
  try {
    optimizer.set_state(loaded);
  } catch (const SerializationError&) {
    throw;
  } catch (const Error& e) {
    throw SerializationError(detail::cat("load: '", path, "': the checkpoint does not fit the optimizer (nothing was changed): ",
                                         e.what()));
  }
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

}  // namespace tg
