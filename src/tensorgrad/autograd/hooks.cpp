// autograd/hooks.cpp: the mutex that guards the creation of hook tables. The lists themselves are in
// autograd/hooks.h; the backward pass calls tensor hooks in autograd/engine.cpp, Module calls its own
// in nn/module.cpp.
#include "tensorgrad/autograd/hooks.h"

namespace tg {

// See Note [Hook lists] in autograd/engine.cpp.
std::mutex& detail::hook_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace tg
