/// \file
/// nn/prune.h: tg::nn::utils::prune, PyTorch's torch.nn.utils.prune: l1_unstructured,
/// random_unstructured, ln_structured, global_unstructured, custom_from_mask, remove, is_pruned.
/// Pruning keeps PyTorch's state layout (Note [Pruning state] in nn/prune.cpp): the parameter becomes
/// `<name>_orig`, a `<name>_mask` buffer is added, and the pruned tensor `<name>` = orig * mask is
/// recomputed by a forward pre-hook before each forward, so a pruned model's state_dict has PyTorch's keys.
/// Module::clone() (and so DataParallel) copies the pruning: the copy computes its weight from its
/// own weight_orig and weight_mask; to(dtype) and half() cast both.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "tensorgrad/nn/module.h"

namespace tg {
namespace nn {
namespace utils {
namespace prune {

/// How much to prune (PyTorch's amount=): a fraction in [0, 1] of the entries (or channels) still
/// unpruned, rounded half to even as Python's round(), or an absolute count when an integer.
struct Amount {
  /// A fraction of the unpruned entries, in [0, 1].
  Amount(double fraction) : fraction_(fraction), is_count_(false) {}   // NOLINT(google-explicit-constructor)
  /// An absolute number of entries (or channels) to prune, >= 0.
  Amount(int count) : count_(count), is_count_(true) {}                // NOLINT(google-explicit-constructor)
  /// An absolute number of entries (or channels) to prune, >= 0.
  Amount(int64_t count) : count_(count), is_count_(true) {}            // NOLINT(google-explicit-constructor)
  /// The number to prune out of n unpruned: round(fraction n) or the count. Error (PyTorch's
  /// ValueError wording) for a fraction outside [0, 1], a negative count, or a count above n.
  int64_t of(int64_t n) const;

 private:
  double fraction_ = 0;
  int64_t count_ = 0;
  bool is_count_ = false;
};

/// The unstructured methods global_unstructured accepts (PyTorch's pruning_method=).
enum class Method {
  L1Unstructured,       ///< Prune the entries of smallest absolute value (prune.L1Unstructured).
  RandomUnstructured,   ///< Prune entries drawn at random (prune.RandomUnstructured), from the manual_seed stream.
};

/// Prunes the `amount` unpruned entries of module's parameter `name` of smallest absolute value
/// (prune.l1_unstructured). Pruning again composes the masks (PyTorch's PruningContainer): the new
/// amount counts among the entries still unpruned. Error when `name` is no parameter of module.
void l1_unstructured(Module& module, const std::string& name, Amount amount);
/// Prunes `amount` unpruned entries chosen at random (prune.random_unstructured; manual_seed stream,
/// so the choice differs from PyTorch's generator).
void random_unstructured(Module& module, const std::string& name, Amount amount);
/// Prunes `amount` whole channels along dim (prune.ln_structured): those of smallest L`n` norm (n > 0,
/// or infinity), the norm taken over the other dims of the unpruned parameter; channels pruned before
/// are not counted again.
void ln_structured(Module& module, const std::string& name, Amount amount, double n, int64_t dim);
/// Prunes `amount` entries across all the (module, name) pairs at once (prune.global_unstructured):
/// the importance of each entry is its current (already pruned) value's magnitude for L1Unstructured.
void global_unstructured(const std::vector<std::pair<Module*, std::string>>& parameters, Amount amount,
                         Method method = Method::L1Unstructured);
/// Prunes with a given mask of the parameter's shape (prune.custom_from_mask): entries where mask is 0.
void custom_from_mask(Module& module, const std::string& name, const Tensor& mask);
/// Makes the pruning permanent (prune.remove): `name` becomes a parameter again holding orig * mask
/// (the same handle as `<name>_orig`, so optimizers keep it), and `<name>_orig`, `<name>_mask` and
/// the hook go. Error when `name` is not pruned.
void remove(Module& module, const std::string& name);
/// Whether any parameter of module (or its descendants) is pruned (prune.is_pruned).
bool is_pruned(const Module& module);

}  // namespace prune
}  // namespace utils
}  // namespace nn
}  // namespace tg
