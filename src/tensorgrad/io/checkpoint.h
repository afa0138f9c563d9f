/// \file
/// io/checkpoint.h: tg::save / tg::load of a Module's parameters and buffers (strict or not,
/// all-or-nothing), of an Optimizer's state, of a GradScaler's, and of a Tensor or a list of them
/// (libtorch's torch::save(tensor, path)), as safetensors files
/// (io/safetensors.h). Implemented in io/checkpoint.cpp. Not here: the Module, Optimizer and
/// GradScaler classes themselves, and any other file format (pickle, PyTorch .pt).
#pragma once
#include <string>
#include <vector>

#include "tensorgrad/autograd/tensor.h"
#include "tensorgrad/io/safetensors.h"
#include "tensorgrad/nn/module.h"   // nn::Module and nn::ModuleHolder (nn/pimpl.h)

namespace tg {

namespace nn { class Module; }
namespace optim {
class Optimizer;
class LRScheduler;
class ReduceLROnPlateau;
}  // namespace optim
namespace amp { class GradScaler; }

/// What a module load did not match, as PyTorch's load_state_dict returns it (empty when strict).
struct IncompatibleKeys {
  std::vector<std::string> missing_keys;      ///< the module's names that the file lacks (left unchanged)
  std::vector<std::string> unexpected_keys;   ///< the file's names that the module lacks (ignored)
};

/// Saves module.named_parameters() and module.named_buffers() ("fc1.weight", ...).
void save(const nn::Module& module, const std::string& path);
/// Loads a file into the module's parameters and buffers: their values are written in, their handles,
/// storages and devices are kept (views of them see the new values). Shape and dtype mismatches, and
/// missing and unexpected keys when strict, are listed in one tg::SerializationError; a damaged file or
/// checksums that do not match throw from load_tensors first. After any error the module is unchanged.
/// Not strict: the keys both have are loaded and the others returned.
IncompatibleKeys load(nn::Module& module, const std::string& path, const LoadOptions& options = {});
/// save() of the module a holder holds (libtorch's torch::save(model, path) with a TORCH_MODULE).
template <class M>
void save(const nn::ModuleHolder<M>& holder, const std::string& path) {
  save(static_cast<const nn::Module&>(*holder), path);
}
/// load() into the module a holder holds (libtorch's torch::load(model, path)).
template <class M>
IncompatibleKeys load(nn::ModuleHolder<M>& holder, const std::string& path, const LoadOptions& options = {}) {
  return load(static_cast<nn::Module&>(*holder), path, options);
}

/// Saves optimizer.state() (SGD: "momentum_buffer.<parameter index>", Adam: "exp_avg.<i>", ...) and,
/// as PyTorch's state_dict()["param_groups"], every group's options ("param_groups.<g>.lr",
/// ".momentum", ".beta1", ... per OptimizerOptions::values(), ".initial_lr" when set) and parameter
/// indices ("param_groups.<g>.params").
void save(const optim::Optimizer& optimizer, const std::string& path);
/// Loads a file written by save(optimizer, ...): the state through Optimizer::set_state and every
/// group's options (so a resumed run continues at the learning rates a scheduler had reached). On a
/// mismatch (other groups or parameters, an unknown option, a state that does not fit) the optimizer
/// is unchanged and tg::SerializationError names the path. A file without param_groups entries
/// loads the state only.
void load(optim::Optimizer& optimizer, const std::string& path, const LoadOptions& options = {});

/// Saves one tensor (libtorch's torch::save(tensor, path)): a safetensors file holding it under the
/// name "0", its value copied to the CPU. SerializationError naming the path for an undefined tensor
/// or a failed write.
void save(const Tensor& tensor, const std::string& path);
/// Saves tensors in order under the names "0", "1", ... (libtorch's torch::save(std::vector<Tensor>, path)).
void save(const std::vector<Tensor>& tensors, const std::string& path);
/// Loads a file holding exactly one tensor (what save(tensor, path) wrote, or any safetensors file of
/// one tensor) into tensor, which becomes a new CPU leaf that does not require grad (libtorch's
/// torch::load(tensor, path)); SerializationError naming the path otherwise, tensor unchanged.
void load(Tensor& tensor, const std::string& path, const LoadOptions& options = {});
/// Loads what save(tensors, path) wrote: the tensors named "0" ... "n-1", in that order, as CPU
/// leaves. SerializationError naming the path for other names; tensors is unchanged then.
void load(std::vector<Tensor>& tensors, const std::string& path, const LoadOptions& options = {});

/// Saves scaler.state_dict() as a safetensors file (an empty one for a disabled scaler).
void save(const amp::GradScaler& scaler, const std::string& path);
/// Loads a file written by save(scaler, ...) through GradScaler::load_state_dict: on a mismatch the
/// scaler is unchanged and tg::SerializationError names the path. options.strict(false) is refused.
void load(amp::GradScaler& scaler, const std::string& path, const LoadOptions& options = {});

/// Saves a learning-rate scheduler's state() (PyTorch's scheduler.state_dict(): its epoch, base and
/// last learning rates; SequentialLR's schedulers too), each number a float64 scalar of that name.
void save(const optim::LRScheduler& scheduler, const std::string& path);
/// Loads a file written by save(scheduler, ...) into a scheduler built the same way (the
/// hyperparameters are the constructor's): on a mismatch the scheduler is unchanged and
/// tg::SerializationError names the path. Load the optimizer's checkpoint too: the learning rates
/// themselves live there.
void load(optim::LRScheduler& scheduler, const std::string& path, const LoadOptions& options = {});
/// Saves ReduceLROnPlateau's state() (epoch, best metric, bad epochs, cooldown, last rates).
void save(const optim::ReduceLROnPlateau& scheduler, const std::string& path);
/// Loads a file written by save(plateau scheduler, ...); SerializationError naming the path on a
/// mismatch, the scheduler unchanged.
void load(optim::ReduceLROnPlateau& scheduler, const std::string& path, const LoadOptions& options = {});

}  // namespace tg
