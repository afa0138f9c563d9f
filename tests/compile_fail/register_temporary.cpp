// tests/compile_fail/register_temporary.cpp: must NOT compile. Registering a temporary module would
// leave a dangling child (Note [Temporaries in register_module] in nn/module.h); the ctest
// compile_fail_register_temporary requires the static_assert's message in the compiler's output.
#include <tensorgrad.h>

struct Net : tg::nn::Module {
  Net() { register_module("fc", tg::nn::Linear(4, 2)); }
};

int main() {
  Net net;
  return 0;
}
