// engine/hooks.cpp: the mutex that guards the creation of hook tables. The lists themselves are in
// engine/hooks.h; the backward pass calls tensor hooks in engine/autograd.cpp, Module calls its own
// in nn/module.cpp.
#include "tensorgrad/engine/hooks.h"

namespace tg {

// See Note [Hook lists] in engine/autograd.cpp.
std::mutex& detail::hook_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace tg
