// tests/compile_fail/register_temporary.cpp: must NOT compile. Registering a temporary of a module type
// of the user's would leave a dangling child (Note [Temporaries in register_module] in nn/module.h; a
// built-in layer's temporary moves into shared ownership instead); the ctest
// compile_fail_register_temporary requires the static_assert's message in the compiler's output.
#include <tensorgrad.h>

struct Block : tg::nn::Module {
  tg::nn::Linear fc{4, 2};
  Block() { register_module("fc", fc); }
};

struct Net : tg::nn::Module {
  Net() { register_module("block", Block()); }
};

int main() {
  Net net;
  return 0;
}
