/// \file
/// autograd/hooks.h: RemovableHandle (what every register_*hook returns) and the hook lists behind it.
/// Tensor hooks are registered through Tensor (autograd/tensor.h) and called by the backward pass
/// (autograd/engine.cpp); module hooks through nn::Module (nn/module.h). See Note [Hook lists].
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace tg {

class Tensor;

namespace detail {
/// A list of hooks that a RemovableHandle can take one entry out of, by id.
class HookRegistry {
 public:
  virtual ~HookRegistry() = default;
  /// Takes out the hook registered under id; a no-op when it is no longer there.
  virtual void remove(uint64_t id) = 0;
};
}  // namespace detail

/// What every register_*hook returns (PyTorch's torch.utils.hooks.RemovableHandle): remove() takes
/// the hook out of the list it was registered in. Removing twice is harmless, and so is removing after
/// the module or tensor the hook was registered on is gone (the handle only holds a weak reference to
/// the list). Dropping a handle does not remove its hook. A handle may stand for several hooks, e.g.
/// one per parameter: `RemovableHandle all({h1, h2, h3}); all.remove();`.
class RemovableHandle {
 public:
  /// A handle that removes nothing.
  RemovableHandle() = default;
  /// One hook: entry id of registry.
  RemovableHandle(std::weak_ptr<detail::HookRegistry> registry, uint64_t id) {
    entries_.emplace_back(std::move(registry), id);
  }
  /// All the hooks of several handles; remove() takes out every one of them.
  explicit RemovableHandle(const std::vector<RemovableHandle>& handles) {
    for (const RemovableHandle& h : handles) entries_.insert(entries_.end(), h.entries_.begin(), h.entries_.end());
  }
  /// Takes the hook (or hooks) out of their lists; later calls do nothing.
  void remove() {
    auto entries = std::move(entries_);
    entries_.clear();
    for (auto& e : entries)
      if (auto registry = e.first.lock()) registry->remove(e.second);
  }
  /// The number of hooks this handle still stands for (0 after remove()). A hook whose list died with
  /// its module or tensor still counts until remove().
  std::size_t size() const { return entries_.size(); }

 private:
  std::vector<std::pair<std::weak_ptr<detail::HookRegistry>, uint64_t>> entries_;
};

namespace detail {

/// Guards the creation of every lazily made hook table (LazyHooks::get_or_create). See Note [Hook lists].
std::mutex& hook_mutex();

/// Hooks of one signature, in registration order, behind their own mutex. Callers take a snapshot()
/// and call it with no lock held, so a hook may register or remove hooks (also on this list) and the
/// list can be read by several threads' backward passes at once. See Note [Hook lists].
template <class Fn>
class HookList final : public HookRegistry {
 public:
  /// Appends fn and returns its id.
  uint64_t add(Fn fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t id = next_id_++;
    hooks_.emplace_back(id, std::make_shared<const Fn>(std::move(fn)));
    count_.store(hooks_.size(), std::memory_order_release);
    return id;
  }
  /// Takes out the hook with this id (a no-op when absent).
  void remove(uint64_t id) override {
    std::shared_ptr<const Fn> dropped;   // destroyed after the lock: its captures may do anything
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = hooks_.begin(); it != hooks_.end(); ++it)
      if (it->first == id) {
        dropped = std::move(it->second);
        hooks_.erase(it);
        break;
      }
    count_.store(hooks_.size(), std::memory_order_release);
  }
  /// Takes out every hook.
  void clear() {
    std::vector<std::pair<uint64_t, std::shared_ptr<const Fn>>> dropped;   // destroyed after the lock
    std::lock_guard<std::mutex> lock(mutex_);
    dropped.swap(hooks_);
    count_.store(0, std::memory_order_release);
  }
  /// True when no hook is registered (read without the lock: a fast path for the callers).
  bool empty() const { return count_.load(std::memory_order_acquire) == 0; }
  /// The hooks, in registration order, as of now.
  std::vector<std::shared_ptr<const Fn>> snapshot() const {
    std::vector<std::shared_ptr<const Fn>> out;
    if (empty()) return out;
    std::lock_guard<std::mutex> lock(mutex_);
    out.reserve(hooks_.size());
    for (const auto& h : hooks_) out.push_back(h.second);
    return out;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<uint64_t, std::shared_ptr<const Fn>>> hooks_;
  uint64_t next_id_ = 0;
  std::atomic<std::size_t> count_{0};
};

/// A hook table made on first registration and published through an atomic pointer, so that the
/// backward pass and Module::operator() check "no hooks here" with one load and no lock, and a
/// Tensor or Node without hooks costs no allocation. The table lives as long as its owner; handles
/// hold weak references to its lists (owner() is the shared_ptr they alias).
template <class Table>
class LazyHooks {
 public:
  LazyHooks() = default;
  /// A copy starts without hooks: hooks belong to the object they were registered on (copying a
  /// TensorImpl to keep an old version's history, ops/inplace.cpp, does not copy them).
  LazyHooks(const LazyHooks&) {}
  LazyHooks& operator=(const LazyHooks&) = delete;
  /// The table, or null when nothing was ever registered.
  Table* get() const { return ptr_.load(std::memory_order_acquire); }
  /// The table, made now when there is none yet.
  const std::shared_ptr<Table>& get_or_create() {
    std::lock_guard<std::mutex> lock(hook_mutex());
    if (!owner_) {
      owner_ = std::make_shared<Table>();
      ptr_.store(owner_.get(), std::memory_order_release);
    }
    return owner_;
  }

 private:
  std::atomic<Table*> ptr_{nullptr};
  std::shared_ptr<Table> owner_;   // written once, under hook_mutex(), before ptr_ is published
};

/// A tensor gradient hook (Tensor::register_hook): returns the replacement gradient, or an undefined
/// Tensor to keep the one it was given.
using GradHook = std::function<Tensor(const Tensor& grad)>;
/// A post-accumulate-grad hook (Tensor::register_post_accumulate_grad_hook): sees the leaf itself.
using PostAccumulateGradHook = std::function<void(Tensor& param)>;

/// The hooks of one tensor: on a leaf's TensorImpl both lists, on a Node (a non-leaf's grad_fn) the
/// gradient hooks only.
struct TensorHooks {
  HookList<GradHook> grad;                                  ///< register_hook, in registration order
  HookList<PostAccumulateGradHook> post_accumulate;         ///< register_post_accumulate_grad_hook (leaves)
};

}  // namespace detail
}  // namespace tg
