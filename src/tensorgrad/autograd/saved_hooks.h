/// \file
/// autograd/saved_hooks.h: saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks and
/// save_on_cpu): while a guard is alive on a thread, every tensor an op saves for backward
/// (SavedTensor, autograd/tensor.h) is handed to a pack function, and backward gets it back through
/// the matching unpack function. SavedTensor calls them (autograd/tensor.cpp); tg::checkpoint
/// switches them off for the graphs it records only to drop (nn/checkpoint.cpp).
#pragma once
#include <any>
#include <functional>
#include <memory>

#include "tensorgrad/core/raw_tensor.h"

namespace tg {
namespace autograd {

/// Called when an op saves `saved` for its backward; what it returns is kept instead of the tensor
/// (which is then no longer held by the graph).
using PackHook = std::function<std::any(const RawTensor& saved)>;
/// Called when backward reads a saved tensor: returns it, with its shape and dtype, from what the
/// pack hook returned.
using UnpackHook = std::function<RawTensor(const std::any& packed)>;

/// While alive, tensors saved for backward on this thread go through pack, and backward reads them
/// through unpack (torch.autograd.graph.saved_tensors_hooks). Guards nest: the innermost applies.
/// A saved tensor keeps the hooks it was packed with, so backward may run after the guard is gone.
/// Example, counting the bytes a graph saves:
/// \code
/// std::size_t bytes = 0;
/// tg::autograd::SavedTensorHooksGuard count(
///     [&](const tg::RawTensor& t) { bytes += t.storage()->nbytes(); return std::any(t); },
///     [](const std::any& p) { return std::any_cast<tg::RawTensor>(p); });
/// \endcode
/// An in-place write to a saved tensor is still detected (Note [Version counter]) while its storage
/// is alive elsewhere; unpack returning another shape or dtype raises AutogradError.
class SavedTensorHooksGuard {
 public:
  /// Installs pack and unpack for this thread; Error when either is empty.
  SavedTensorHooksGuard(PackHook pack, UnpackHook unpack);
  /// Puts back the hooks the constructor found.
  ~SavedTensorHooksGuard();
  SavedTensorHooksGuard(const SavedTensorHooksGuard&) = delete;
  SavedTensorHooksGuard& operator=(const SavedTensorHooksGuard&) = delete;
 private:
  std::shared_ptr<const void> prev_;
};

/// While alive, tensors saved for backward on a CUDA device are copied to host memory (pinned when
/// pin_memory, so that the copy back is asynchronous) and copied back to their device when backward
/// reads them (torch.autograd.graph.save_on_cpu): GPU memory for activations traded for host
/// memory and copies. CPU tensors are kept as they are.
class SaveOnCpuGuard {
 public:
  /// Installs the offloading hooks for this thread.
  explicit SaveOnCpuGuard(bool pin_memory = true);
 private:
  SavedTensorHooksGuard guard_;
};

}  // namespace autograd

namespace detail {
/// One pack/unpack pair, shared by the tensors it packed.
struct SavedTensorHooks {
  autograd::PackHook pack;       ///< see autograd::PackHook
  autograd::UnpackHook unpack;   ///< see autograd::UnpackHook
};
/// The hooks in force on this thread, or null (none installed, or switched off).
const SavedTensorHooks* current_saved_tensor_hooks();
/// The hooks in force as a shared handle (what a SavedTensor keeps); null when none.
std::shared_ptr<const SavedTensorHooks> current_saved_tensor_hooks_handle();
/// While alive, no hooks apply on this thread (torch.autograd.graph.disable_saved_tensors_hooks,
/// without its error): tg::checkpoint records graphs it drops at once, which should not be packed.
class DisableSavedTensorHooksGuard {
 public:
  /// Switches the hooks off.
  DisableSavedTensorHooksGuard();
  /// Puts back the hooks the constructor found.
  ~DisableSavedTensorHooksGuard();
  DisableSavedTensorHooksGuard(const DisableSavedTensorHooksGuard&) = delete;
  DisableSavedTensorHooksGuard& operator=(const DisableSavedTensorHooksGuard&) = delete;
 private:
  std::shared_ptr<const void> prev_;
};
}  // namespace detail

}  // namespace tg
