// autograd/saved_hooks.cpp: the thread-local saved-tensor hooks and SaveOnCpuGuard. SavedTensor
// (autograd/tensor.cpp) packs and unpacks through them.
#include "tensorgrad/autograd/saved_hooks.h"

#include <utility>

#include "tensorgrad/core/accelerator.h"
#include "tensorgrad/core/error.h"

namespace tg {

namespace {
thread_local std::shared_ptr<const detail::SavedTensorHooks> t_hooks;   // null: none
}  // namespace

const detail::SavedTensorHooks* detail::current_saved_tensor_hooks() { return t_hooks.get(); }
std::shared_ptr<const detail::SavedTensorHooks> detail::current_saved_tensor_hooks_handle() { return t_hooks; }

detail::DisableSavedTensorHooksGuard::DisableSavedTensorHooksGuard() : prev_(std::move(t_hooks)) { t_hooks.reset(); }
detail::DisableSavedTensorHooksGuard::~DisableSavedTensorHooksGuard() {
  t_hooks = std::static_pointer_cast<const detail::SavedTensorHooks>(std::move(prev_));
}

namespace autograd {

SavedTensorHooksGuard::SavedTensorHooksGuard(PackHook pack, UnpackHook unpack) {
  TG_CHECK(pack && unpack, Error, "SavedTensorHooksGuard: the pack and unpack hooks must both be set");
  prev_ = t_hooks;
  t_hooks = std::make_shared<const detail::SavedTensorHooks>(detail::SavedTensorHooks{std::move(pack), std::move(unpack)});
}
SavedTensorHooksGuard::~SavedTensorHooksGuard() {
  t_hooks = std::static_pointer_cast<const detail::SavedTensorHooks>(std::move(prev_));
}

namespace {
struct Offloaded {   // a saved CUDA tensor's host copy and the device it goes back to
  RawTensor host;
  Device device;
};
}  // namespace

SaveOnCpuGuard::SaveOnCpuGuard(bool pin_memory)
    : guard_(
          [pin_memory](const RawTensor& t) -> std::any {
            if (!t.device().is_cuda()) return t;
            RawTensor host = t.to(Device::cpu());   // synchronizes with the device's stream
            if (pin_memory) host = cuda::detail::pin(host);
            return Offloaded{std::move(host), t.device()};
          },
          [](const std::any& packed) -> RawTensor {
            if (const auto* o = std::any_cast<Offloaded>(&packed)) return o->host.to(o->device, /*non_blocking=*/true);
            return std::any_cast<const RawTensor&>(packed);
          }) {}

}  // namespace autograd
}  // namespace tg
